#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The node image (contrib/container/) and the Kubernetes manifests
# (contrib/kubernetes/), without a cluster or a container: the manifests
# read with python3-yaml and checked against each other, the configuration
# they mount and the documented privileges (t/helpers/k8s-manifests.py);
# the Containerfile, build.sh and the entrypoint read; every node
# configuration checked by the built daemon's --check-config. The last test
# shows that each check fails on a manifest broken on purpose.
# t/container-image.sh builds the image and runs a job in it for real.

bats_require_minimum_version 1.5.0

: "${SBX_BUILDDIR:?run through make check, or set SBX_BUILDDIR}"
: "${SBX_SRCDIR:=$SBX_BUILDDIR}"

setup() {
        K8S=$SBX_SRCDIR/contrib/kubernetes
        CTR=$SBX_SRCDIR/contrib/container
        /usr/bin/python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed (apt-get install python3-yaml)"
}

manifests() {
        /usr/bin/python3 "$SBX_SRCDIR/t/helpers/k8s-manifests.py" "$@"
}

# manifests_ok CHECK ARG...: the check finds nothing wrong (what it found
# is shown otherwise).
manifests_ok() {
        run manifests "$@"
        [ -z "$output" ] || echo "$output"
        [ "$status" -eq 0 ]
}

# The node configurations, database_file pointed at a file of this test
# (the daemon reads it at load), in $BATS_TEST_TMPDIR.
node_configs() {
        echo 'postgresql://sbx@db.invalid:5432/sbx' >"$BATS_TEST_TMPDIR/conninfo"
        mkdir "$BATS_TEST_TMPDIR/cm"
        manifests configs "$K8S" "$BATS_TEST_TMPDIR/cm" >/dev/null
        cp "$CTR/sbx-supervisord.conf" "$BATS_TEST_TMPDIR/cm/image.conf"
        sed -i "s|^database_file = .*|database_file = $BATS_TEST_TMPDIR/conninfo|" "$BATS_TEST_TMPDIR"/cm/*.conf
}

# break_it FILE SED-EXPRESSION: a fresh copy of the manifests in $d, FILE
# changed by the expression (which must change something).
break_it() {
        rm -rf "$d"
        cp -r "$K8S" "$d"
        sed -i "$2" "$d/$1"
        if cmp -s "$K8S/$1" "$d/$1"; then
                echo "the change $2 changed nothing in $1" >&2
                return 1
        fi
}

@test "every manifest parses, of the kinds expected, in namespace sbx, each once and each in kustomization.yaml" {
        manifests_ok files "$K8S"
}

@test "every container's liveness probe asks /healthz and its readiness probe /readyz, on its configuration's [http] port" {
        manifests_ok probes "$K8S"
}

@test "the secret sbx-db is mounted, read-only and readable by the node only, where each node's database_file says" {
        manifests_ok secret "$K8S"
        # and the image's own configuration names the same file
        db=$(sed -n 's/^database_file = //p' "$CTR/sbx-supervisord.conf")
        [ "$db" = /run/secrets/sbx-db/conninfo ]
}

@test "roles: the DaemonSet runs worker.conf (role worker), the Deployment of 2 api.conf (role api); the Service picks the api pods only; both agree on tenants and tokens" {
        manifests_ok roles "$K8S"
        grep -qx 'role = both' "$CTR/sbx-supervisord.conf"
}

@test "the worker adds exactly the capabilities the READMEs document and t/container-image.sh grants, each with its reason, to root, RuntimeDefault seccomp and no AppArmor profile" {
        manifests_ok worker-caps "$K8S" "$K8S/README.md" "$CTR/README.md" "$SBX_SRCDIR/t/container-image.sh"
        # the list itself, as documented
        run -0 manifests caps-of "$K8S/README.md"
        [ "$output" = "CHOWN DAC_OVERRIDE FOWNER KILL NET_ADMIN NET_BIND_SERVICE SETGID SETPCAP SETUID SYS_ADMIN SYS_PTRACE" ]
}

@test "the api nodes hold no privilege: user sbx, no capability, no_new_privs, RuntimeDefault seccomp, a read-only root" {
        manifests_ok api-privileges "$K8S"
}

@test "every container requests CPU and memory and has a memory limit; all nodes run one image, the one kustomization.yaml names" {
        manifests_ok resources "$K8S"
        manifests_ok images "$K8S"
}

@test "kubectl kustomize renders the directory into its six objects" {
        command -v kubectl >/dev/null || skip "kubectl is not installed"
        run -0 kubectl kustomize "$K8S"
        [ "$(grep -c '^kind: ' <<<"$output")" -eq 6 ]
}

@test "the Containerfile: a Debian 12 base given as an argument, this tree's packages and their dependencies only, the node's configuration and the entrypoint" {
        f=$CTR/Containerfile
        head -n 1 "$f" | grep -qx '# SPDX-License-Identifier: Apache-2.0'
        grep -qx 'ARG BASE=debian:12' "$f"
        grep -qx 'FROM ${BASE}' "$f"
        grep -q 'apt-get install -y --no-install-recommends' "$f"
        grep -q '/tmp/sbx-debs/\*\.deb' "$f"
        grep -qx 'COPY sbx-supervisord.conf /etc/sbx/sbx-supervisord.conf' "$f"
        grep -qx 'ENTRYPOINT \["/usr/local/sbin/sbx-node"\]' "$f"
        grep -qx 'CMD \["--config", "/etc/sbx/sbx-supervisord.conf"\]' "$f"
        grep -qx 'USER root' "$f"
        # no compiler, no build tool, no -dev package
        run -1 grep -Ew 'gcc|clang|g\+\+|make|build-essential|[a-z0-9.+]+-dev' "$f"
        # every file it copies is one build.sh puts in the context
        while read -r src _; do
                case $src in
                debs/) grep -q 'mkdir "$ctx/debs"' "$CTR/build.sh" ;;
                *)
                        [ -f "$CTR/$src" ]
                        grep -q "\"\$here/$src\"" "$CTR/build.sh"
                        ;;
                esac
        done < <(sed -n 's/^COPY //p' "$f")
}

@test "build.sh and the entrypoint are sh; build.sh refuses a wrong call, and a directory without the packages, naming what is missing" {
        sh -n "$CTR/build.sh"
        sh -n "$CTR/entrypoint.sh"
        bash -n "$SBX_SRCDIR/t/container-image.sh"
        run -2 "$CTR/build.sh"
        [[ $output == *"usage:"* ]]
        mkdir "$BATS_TEST_TMPDIR/empty"
        run -1 env CONTAINER_ENGINE=true "$CTR/build.sh" "$BATS_TEST_TMPDIR/empty"
        [[ $output == *"no sbx-launch_*.deb in $BATS_TEST_TMPDIR/empty"* ]]
        # the dependency on the daemon's packages: their names in debian/control
        grep -qx 'Package: sbx-launch' "$SBX_SRCDIR/debian/control"
        grep -qx 'Package: sbx-supervisor' "$SBX_SRCDIR/debian/control"
}

@test "the image's configuration and the ConfigMap's (worker.conf, api.conf) pass the built daemon's --check-config" {
        daemon=$SBX_BUILDDIR/supervisor/sbx-supervisord
        [ -x "$daemon" ] || skip "no daemon built at $daemon"
        getent passwd sbx >/dev/null || skip "no user sbx here, which the configurations name (the image makes it)"
        node_configs
        for f in image.conf worker.conf api.conf; do
                run "$daemon" --config "$BATS_TEST_TMPDIR/cm/$f" --check-config
                if [[ $output == *"unknown section [cluster]"* ]]; then
                        skip "the daemon at $daemon lacks [cluster] support: $output"
                fi
                echo "$f: $output"
                [ "$status" -eq 0 ]
                [[ $output == *": OK ("* ]]
        done
}

@test "each check fails on a manifest broken on purpose" {
        d=$BATS_TEST_TMPDIR/k8s
        break_it worker.yaml 's|path: /readyz|path: /healthz|'
        run -1 manifests probes "$d"
        [[ $output == *"readinessProbe asks /healthz, not /readyz"* ]]
        break_it api.yaml 's|port: http|port: 9464|'
        run -1 manifests probes "$d"
        [[ $output == *"reaches port 9464, [http] listen is 0.0.0.0:8080"* ]]
        break_it worker.yaml '/- SYS_PTRACE/d'
        run -1 manifests worker-caps "$d" "$K8S/README.md"
        [[ $output == *"README.md lists"* ]]
        break_it worker.yaml 's|- KILL  .*|- KILL|'
        run -1 manifests worker-caps "$d"
        [[ $output == *"capability KILL without a comment"* ]]
        break_it api.yaml 's|mountPath: /run/secrets/sbx-db|mountPath: /run/secrets/db|'
        run -1 manifests secret "$d"
        [[ $output == *"mounted at /run/secrets/db, database_file is /run/secrets/sbx-db/conninfo"* ]]
        break_it api.yaml 's|defaultMode: 0440|defaultMode: 0444|'
        run -1 manifests secret "$d"
        [[ $output == *"others may read them"* ]]
        break_it configmap.yaml 's|role = api|role = both|'
        run -1 manifests roles "$d"
        [[ $output == *"api.conf says role = both, not api"* ]]
        break_it service.yaml 's|app.kubernetes.io/component: api|app.kubernetes.io/component: worker|'
        run -1 manifests roles "$d"
        [[ $output == *"does not pick the api pods"* ]]
        break_it api.yaml 's|runAsNonRoot: true|runAsNonRoot: false|'
        run -1 manifests api-privileges "$d"
        [[ $output == *"runAsNonRoot is False, not True"* ]]
        break_it api.yaml '/limits:/,/memory: 1Gi/d'
        run -1 manifests resources "$d"
        [[ $output == *"no memory limit"* ]]
        break_it kustomization.yaml '/- service.yaml/d'
        run -1 manifests files "$d"
        [[ $output == *"kustomization.yaml lists"* ]]
        break_it worker.yaml 's|registry.example.com/sbx/sbx-supervisord:0.1.0|registry.example.com/other:1|'
        run -1 manifests images "$d"
        [[ $output == *"different images"* ]]
}
