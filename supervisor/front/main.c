/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord(8): read the configuration, then serve until stopped. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "daemon.h"

#ifndef SBX_SYSCONFDIR
#define SBX_SYSCONFDIR "/etc"
#endif

#define DEFAULT_CONFIG SBX_SYSCONFDIR "/sbx/sbx-supervisord.conf"

static void usage(FILE *f) {
        fprintf(f,
                "Usage: sbx-supervisord [OPTION]...\n"
                "Run sandboxed jobs for clients of a Unix socket (see sbx-supervisord(8)).\n\n"
                "  -c, --config FILE   configuration file (default " DEFAULT_CONFIG ")\n"
                "  -s, --socket PATH   listen on PATH instead of the configured socket\n"
                "  -f, --foreground    stay in the foreground (the default and only mode)\n"
                "      --check-config  parse the configuration, report errors and exit\n"
                "      --log-format F  text or json (overrides log_format)\n"
                "  -h, --help          show this help\n"
                "  -V, --version       show the version\n");
}

int main(int argc, char **argv) {
        enum { OPT_CHECK = 256, OPT_LOG_FORMAT };
        static const struct option opts[] = {
                { "config", required_argument, NULL, 'c' },     { "socket", required_argument, NULL, 's' },
                { "foreground", no_argument, NULL, 'f' },       { "check-config", no_argument, NULL, OPT_CHECK },
                { "log-format", required_argument, NULL, OPT_LOG_FORMAT },
                { "help", no_argument, NULL, 'h' },             { "version", no_argument, NULL, 'V' },
                { NULL, 0, NULL, 0 },
        };
        const char *config_path = NULL, *socket_path = NULL, *log_format = NULL;
        bool check = false;
        int o;

        while ((o = getopt_long(argc, argv, "c:s:fhV", opts, NULL)) >= 0) {
                switch (o) {
                case 'c':
                        config_path = optarg;
                        break;
                case 's':
                        socket_path = optarg;
                        break;
                case 'f':
                        break;
                case OPT_CHECK:
                        check = true;
                        break;
                case OPT_LOG_FORMAT:
                        if (!streq(optarg, "text") && !streq(optarg, "json")) {
                                fprintf(stderr, "sbx-supervisord: --log-format: expected text or json, got '%s'\n", optarg);
                                return 2;
                        }
                        log_format = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("sbx-supervisord %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "sbx-supervisord: unexpected argument '%s'\n", argv[optind]);
                return 2;
        }

        struct config cfg;
        struct sbx_error err;
        sbx_error_clear(&err);
        config_init(&cfg);
        if (config_load(&cfg, config_path ? config_path : DEFAULT_CONFIG, &err) < 0) {
                fprintf(stderr, "sbx-supervisord: %s\n", err.msg);
                config_free(&cfg);
                return 1;
        }
        if (socket_path) {
                if (socket_path[0] != '/' || strlen(socket_path) >= 108) {
                        fprintf(stderr, "sbx-supervisord: --socket: expected an absolute path shorter than 108 bytes\n");
                        return 2;
                }
                free(cfg.socket_path);
                cfg.socket_path = strdup(socket_path);
        }
        if (log_format)
                cfg.log_json = streq(log_format, "json");
        if (check) {
                printf("%s: OK (%zu tenants)\n", cfg.path, cfg.n_tenants);
                config_free(&cfg);
                return 0;
        }
        log_setup(cfg.log_json);
        if (geteuid() != 0)
                log_warning("not running as root: jobs can only run as this user's uid, and cgroups are likely unavailable");

        struct daemon d;
        int r = daemon_init(&d, &cfg, &err);
        if (r < 0) {
                log_error("%s", err.msg);
                daemon_done(&d);
                config_free(&cfg);
                return 1;
        }
        r = daemon_run(&d);
        daemon_done(&d);
        config_free(&cfg);
        if (r < 0) {
                log_error("event loop: %s", strerror(-r));
                return 1;
        }
        log_notice("stopped");
        return 0;
}
