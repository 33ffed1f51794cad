/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nft.h"
#include "nft-run.h"
#include "util.h"

int nft_teardown(const char *table) {
        static const char *const families[] = { "ip", "ip6" };
        char cmd[128];
        int r = 0;
        for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
                if (nft_table_exists(families[i], table) <= 0)
                        continue;
                snprintf(cmd, sizeof(cmd), "delete table %s %s\n", families[i], table);
                int k = nft_run(cmd, NULL);
                if (k < 0 && r == 0)
                        r = k;
        }
        return r;
}

int nft_table_exists(const char *family, const char *table) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "list table %s %s\n", family, table);
        return nft_run(cmd, NULL) == 0 ? 1 : 0;
}

/* The rules of one family's table (fam "ip" or "ip6"; net/prefix the
 * pool; guard: the forwarding guard, nft_setup()), after the commands that
 * delete an old one. */
static char *table_cmds(const char *fam, const char *table, const char *ifprefix, const char *net, unsigned prefix,
                        const struct nft_guard *guard) {
        char *cmds = NULL, last[NFT_GUARD_MAX + 256] = "";
        /* Forwarding: a job's veth to the world, and back only for what
         * the job started (ICMP errors about it too: related); never veth
         * to veth (jobs must not reach each other past their allowlists'
         * programs). Then the guard: what forwarding the daemon switched
         * on would let through besides the jobs' packets is dropped. A
         * connection got past it only if its first packet did: its later
         * ones pass (another daemon's jobs' answers too, where that
         * daemon found the switch on). With the host-wide switch the
         * policy drops; another daemon's veths (every daemon names them
         * sx*, netveth.c) are left to that daemon's own table. */
        if (guard->ifaces[0] || guard->all)
                snprintf(last, sizeof(last), "    ct state established,related accept\n%s%s%s%s",
                         guard->ifaces[0] ? "    iifname { " : "", guard->ifaces, guard->ifaces[0] ? " } drop\n" : "",
                         guard->all ? "    iifname \"sx*\" accept\n    oifname \"sx*\" accept\n" : "");
        if (asprintf(&cmds,
                     "table %5$s %1$s\n"
                     "delete table %5$s %1$s\n"
                     "table %5$s %1$s {\n"
                     "  chain postrouting {\n"
                     "    type nat hook postrouting priority srcnat; policy accept;\n"
                     "    %5$s saddr %3$s/%4$u oifname != \"%2$s*\" masquerade\n"
                     "  }\n"
                     "  chain forward {\n"
                     "    type filter hook forward priority filter; policy %6$s;\n"
                     "    iifname \"%2$s*\" oifname \"%2$s*\" drop\n"
                     "    iifname \"%2$s*\" %5$s saddr %3$s/%4$u accept\n"
                     "    iifname \"%2$s*\" drop\n"
                     "    oifname \"%2$s*\" ct state established,related accept\n"
                     "    oifname \"%2$s*\" drop\n"
                     "%7$s"
                     "  }\n"
                     "}\n",
                     table, ifprefix, net, prefix, fam, guard->all ? "drop" : "accept", last) < 0)
                return NULL;
        return cmds;
}

int nft_setup(const char *table, const char *ifprefix, uint32_t pool, unsigned prefix, const uint8_t pool6[16],
              unsigned prefix6, const struct nft_guard *guard4, const struct nft_guard *guard6, struct sbx_error *err) {
        char net[INET_ADDRSTRLEN], net6[INET6_ADDRSTRLEN];
        _cleanup_free_ char *v4 = NULL, *v6 = NULL, *cmds = NULL;
        inet_ntop(AF_INET, &pool, net, sizeof(net));
        if (!(v4 = table_cmds("ip", table, ifprefix, net, prefix, guard4)))
                return sbx_error_set(err, ENOMEM, "nftables");
        if (prefix6) {
                inet_ntop(AF_INET6, pool6, net6, sizeof(net6));
                v6 = table_cmds("ip6", table, ifprefix, net6, prefix6, guard6);
        } else if (asprintf(&v6, "table ip6 %1$s\ndelete table ip6 %1$s\n", table) < 0) {
                v6 = NULL; /* asprintf leaves it undefined */
        }
        /* One transaction: the old tables (if a daemon died) go and the
         * new ones come at once. */
        if (!v6 || asprintf(&cmds, "%s%s", v4, v6) < 0) {
                cmds = NULL; /* asprintf leaves it undefined */
                return sbx_error_set(err, ENOMEM, "nftables");
        }
        return nft_run(cmds, err);
}
