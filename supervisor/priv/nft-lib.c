/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <nftables/libnftables.h>

#include "nft-run.h"

static void ctx_freep(struct nft_ctx **c) {
        if (*c)
                nft_ctx_free(*c);
}
#define _cleanup_nft_ __attribute__((cleanup(ctx_freep)))

int nft_run(const char *cmds, struct sbx_error *err) {
        _cleanup_nft_ struct nft_ctx *c = nft_ctx_new(NFT_CTX_DEFAULT);
        if (!c)
                return err ? sbx_error_set(err, ENOMEM, "nftables") : -ENOMEM;
        nft_ctx_buffer_output(c);
        nft_ctx_buffer_error(c);
        if (nft_run_cmd_from_buffer(c, cmds) != 0) {
                if (err) {
                        const char *m = nft_ctx_get_error_buffer(c);
                        char first[256];
                        snprintf(first, sizeof(first), "%s", m ? m : "failed");
                        first[strcspn(first, "\n")] = '\0';
                        sbx_error_msg(err, EIO, "nftables: %s", first);
                }
                return -EIO;
        }
        return 0;
}
