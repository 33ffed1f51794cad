/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nftables/libnftables.h>

#include "nft.h"
#include "util.h"

static void ctx_freep(struct nft_ctx **c) {
        if (*c)
                nft_ctx_free(*c);
}
#define _cleanup_nft_ __attribute__((cleanup(ctx_freep)))

/* Run cmds; on failure err gets nftables' own message. */
static int run(const char *cmds, struct sbx_error *err) {
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

int nft_teardown(const char *table) {
        char cmd[128];
        if (nft_table_exists(table) <= 0)
                return 0;
        snprintf(cmd, sizeof(cmd), "delete table ip %s\n", table);
        return run(cmd, NULL);
}

int nft_table_exists(const char *table) {
        char cmd[128];
        _cleanup_nft_ struct nft_ctx *c = nft_ctx_new(NFT_CTX_DEFAULT);
        if (!c)
                return -ENOMEM;
        nft_ctx_buffer_output(c);
        nft_ctx_buffer_error(c);
        snprintf(cmd, sizeof(cmd), "list table ip %s\n", table);
        return nft_run_cmd_from_buffer(c, cmd) == 0 ? 1 : 0;
}

int nft_setup(const char *table, const char *ifprefix, uint32_t pool, unsigned prefix, struct sbx_error *err) {
        char net[INET_ADDRSTRLEN], *cmds = NULL;
        inet_ntop(AF_INET, &pool, net, sizeof(net));
        /* One transaction: the old table (if a daemon died) goes and the
         * new one comes at once. Forwarding: a job's veth to the world, and
         * back only for what the job started; never veth to veth (jobs
         * must not reach each other past their allowlists' programs). */
        int n = asprintf(&cmds,
                         "table ip %1$s\n"
                         "delete table ip %1$s\n"
                         "table ip %1$s {\n"
                         "  chain postrouting {\n"
                         "    type nat hook postrouting priority srcnat; policy accept;\n"
                         "    ip saddr %3$s/%4$u oifname != \"%2$s*\" masquerade\n"
                         "  }\n"
                         "  chain forward {\n"
                         "    type filter hook forward priority filter; policy accept;\n"
                         "    iifname \"%2$s*\" oifname \"%2$s*\" drop\n"
                         "    iifname \"%2$s*\" ip saddr %3$s/%4$u accept\n"
                         "    iifname \"%2$s*\" drop\n"
                         "    oifname \"%2$s*\" ct state established,related accept\n"
                         "    oifname \"%2$s*\" drop\n"
                         "  }\n"
                         "}\n",
                         table, ifprefix, net, prefix);
        if (n < 0)
                return sbx_error_set(err, ENOMEM, "nftables");
        int r = run(cmds, err);
        free(cmds);
        return r;
}
