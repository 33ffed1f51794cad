# SPDX-License-Identifier: Apache-2.0
# scdoc emits a paragraph macro around every heading and indented block;
# mandoc -Tlint rightly warns about the empty ones. Drop each .P that
# directly follows or precedes a heading, and move one that closes an
# indented block to after the block's .RE, where it still separates entries.
/^\.P$/ {
        if (last ~ /^\.(TH|SH|SS|P|RS)( |$)/)
                next
        pending = 1
        next
}
{
        if (pending && $0 ~ /^\.RE( |$)/) {
                print
                last = $0
                next
        }
        if (pending && $0 !~ /^\.(SH|SS|P)( |$)/)
                print ".P"
        pending = 0
        print
        last = $0
}
