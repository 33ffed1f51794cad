#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Checks of contrib/kubernetes/ for t/container.bats: each subcommand reads
# the manifests in DIR (python3-yaml), prints what is wrong, one line each,
# and exits 1 if anything is; 0 and nothing printed if all holds.
#
#   k8s-manifests.py CHECK DIR [ARG]...
#
# CHECK: files, probes, secret, roles, worker-caps README..., api-privileges,
# resources, images, configs OUTDIR (writes the ConfigMap's files there),
# caps-of FILE (prints the capabilities a README or script lists).
import configparser
import glob
import os
import re
import sys

import yaml

errors = []


def bad(msg):
    errors.append(msg)


def load(d):
    """Every document of every *.yaml in d, with the file it came from."""
    out = []
    for f in sorted(glob.glob(os.path.join(d, "*.yaml"))):
        with open(f) as fh:
            text = fh.read()
        if not text.startswith("# SPDX-License-Identifier: Apache-2.0\n"):
            bad(f"{os.path.basename(f)}: no SPDX header on its first line")
        for doc in yaml.safe_load_all(text):
            if doc is not None:
                out.append((os.path.basename(f), doc))
    return out


def objects(docs, kind):
    return [o for _, o in docs if o.get("kind") == kind]


def one(docs, kind):
    found = objects(docs, kind)
    if len(found) != 1:
        bad(f"expected one {kind}, found {len(found)}")
        return {}
    return found[0]


def workloads(docs):
    return [o for _, o in docs if o.get("kind") in ("Deployment", "DaemonSet", "StatefulSet")]


def containers(w):
    spec = w["spec"]["template"]["spec"]
    return spec.get("initContainers", []) + spec.get("containers", [])


def name(o):
    return f"{o.get('kind')}/{o.get('metadata', {}).get('name')}"


def ini(text):
    """The node configuration as sections of keys (comments ; and # whole
    lines; repeated sections merge, as sbx-supervisord.conf(5) says)."""
    p = configparser.ConfigParser(strict=False, interpolation=None, comment_prefixes=("#", ";"),
                                  inline_comment_prefixes=(" ;", "\t;"))
    p.optionxform = str
    p.read_string(text)
    return p


def config_of(docs, c):
    """The configuration a container is started with: --config FILE, FILE
    a key of the ConfigMap mounted on its directory."""
    args = c.get("args", []) + c.get("command", [])
    if "--config" not in args:
        bad(f"container {c.get('name')}: no --config in its args")
        return None, None
    path = args[args.index("--config") + 1]
    d, key = os.path.split(path)
    cm = one(docs, "ConfigMap")
    for w in workloads(docs):
        if c in containers(w):
            vols = {v["name"]: v for v in w["spec"]["template"]["spec"].get("volumes", [])}
            for m in c.get("volumeMounts", []):
                v = vols.get(m["name"], {})
                if m["mountPath"] == d and v.get("configMap", {}).get("name") == cm.get("metadata", {}).get("name"):
                    if key not in cm.get("data", {}):
                        bad(f"{name(w)}: --config {path}: no key {key} in ConfigMap {cm['metadata']['name']}")
                        return None, None
                    return key, ini(cm["data"][key])
            bad(f"{name(w)}: --config {path}: no ConfigMap mounted at {d}")
    return None, None


def port_number(c, port):
    for p in c.get("ports", []):
        if port in (p.get("name"), p.get("containerPort")):
            return p["containerPort"]
    return None


def check_files(d):
    docs = load(d)
    kinds = sorted(o.get("kind") for _, o in docs)
    want = sorted(["Namespace", "Secret", "ConfigMap", "DaemonSet", "Deployment", "Service", "Kustomization"])
    if kinds != want:
        bad(f"kinds {kinds}, expected {want}")
    ns = one(docs, "Namespace").get("metadata", {}).get("name")
    seen = set()
    for f, o in docs:
        if not o.get("apiVersion") or (o.get("kind") != "Kustomization" and not o.get("metadata", {}).get("name")):
            bad(f"{f}: {o.get('kind')} without apiVersion or metadata.name")
        if o.get("kind") not in ("Namespace", "Kustomization") and o.get("metadata", {}).get("namespace") != ns:
            bad(f"{f}: {name(o)} is not in namespace {ns}")
        if name(o) in seen:
            bad(f"{f}: {name(o)} twice")
        seen.add(name(o))
    k = one(docs, "Kustomization")
    listed = sorted(k.get("resources", []))
    files = sorted(f for f, o in docs if o.get("kind") != "Kustomization")
    if listed != sorted(set(files)):
        bad(f"kustomization.yaml lists {listed}, the directory holds {sorted(set(files))}")


def check_probes(d):
    docs = load(d)
    for w in workloads(docs):
        for c in containers(w):
            key, conf = config_of(docs, c)
            listen = conf.get("http", "listen", fallback=None) if conf else None
            want_port = int(listen.rsplit(":", 1)[1]) if listen else None
            if listen is None:
                bad(f"{name(w)}: its configuration {key} has no [http] listen: no probe can reach it")
            for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                get = c.get(probe, {}).get("httpGet")
                if not get:
                    bad(f"{name(w)} container {c['name']}: no {probe} httpGet")
                    continue
                if get.get("path") != path:
                    bad(f"{name(w)} container {c['name']}: {probe} asks {get.get('path')}, not {path}")
                if get.get("scheme", "HTTP") != "HTTP":
                    bad(f"{name(w)} container {c['name']}: {probe} over {get.get('scheme')}, the listener is plain HTTP")
                n = port_number(c, get.get("port"))
                if n is None:
                    bad(f"{name(w)} container {c['name']}: {probe} port {get.get('port')} is none of its ports")
                elif want_port is not None and n != want_port:
                    bad(f"{name(w)} container {c['name']}: {probe} reaches port {n}, [http] listen is {listen}")


def check_secret(d):
    docs = load(d)
    s = one(docs, "Secret")
    data = dict(s.get("stringData", {}))
    data.update(s.get("data", {}))
    for w in workloads(docs):
        spec = w["spec"]["template"]["spec"]
        vols = {v["name"]: v for v in spec.get("volumes", [])}
        for c in containers(w):
            key, conf = config_of(docs, c)
            if not conf:
                continue
            dbf = conf.get("cluster", "database_file", fallback=None)
            if not dbf:
                bad(f"{name(w)}: {key} has no [cluster] database_file")
                continue
            mdir, mkey = os.path.split(dbf)
            mounts = [m for m in c.get("volumeMounts", [])
                      if vols.get(m["name"], {}).get("secret", {}).get("secretName") == s["metadata"]["name"]]
            if not mounts:
                bad(f"{name(w)}: the secret {s['metadata']['name']} is not mounted")
            for m in mounts:
                if m["mountPath"] != mdir:
                    bad(f"{name(w)}: the secret is mounted at {m['mountPath']}, database_file is {dbf}")
                if not m.get("readOnly"):
                    bad(f"{name(w)}: the secret's mount is not readOnly")
                if mkey not in data:
                    bad(f"{name(w)}: database_file {dbf}: the secret has no key {mkey} (it has {sorted(data)})")
                mode = vols[m["name"]]["secret"].get("defaultMode", 0o644)
                if mode & 0o007:
                    bad(f"{name(w)}: the secret's files are mode {oct(mode)}: others may read them")
                ctx = {**spec.get("securityContext", {}), **c.get("securityContext", {})}
                if ctx.get("runAsUser", 0) != 0 and not (mode & 0o040 and spec.get("securityContext", {}).get("fsGroup")):
                    bad(f"{name(w)}: runs as uid {ctx.get('runAsUser')} and cannot read the secret (mode {oct(mode)}, no fsGroup)")
    info = data.get("conninfo", "")
    if not (info.startswith("postgresql://") or info.startswith("postgres://") or re.match(r"^\w+=", info)):
        bad(f"the conninfo placeholder {info!r} is neither a postgresql:// URI nor key=value pairs")


def check_roles(d):
    docs = load(d)
    ds, dep, svc = one(docs, "DaemonSet"), one(docs, "Deployment"), one(docs, "Service")
    confs = {}
    for w, role in ((ds, "worker"), (dep, "api")):
        for c in containers(w):
            key, conf = config_of(docs, c)
            if not conf:
                continue
            confs[role] = conf
            got = conf.get("cluster", "role", fallback="both")
            if got != role:
                bad(f"{name(w)}: {key} says role = {got}, not {role}")
    if dep.get("spec", {}).get("replicas") != 2:
        bad(f"{name(dep)}: replicas {dep.get('spec', {}).get('replicas')}, not 2")
    if set(confs) == {"worker", "api"}:
        for c in ("api", "worker"):
            if confs[c].has_option("daemon", "user") != (c == "worker"):
                bad(f"the {c} configuration {'lacks' if c == 'worker' else 'has'} [daemon] user")
        shared = lambda conf: {s: dict(conf[s]) for s in conf.sections() if s.startswith(("tenant.", "token."))}
        if shared(confs["api"]) != shared(confs["worker"]):
            bad("the api and worker configurations differ in their [tenant.*] or [token.*] sections")
        for k in ("database_file", "lease"):
            if confs["api"].get("cluster", k, fallback=None) != confs["worker"].get("cluster", k, fallback=None):
                bad(f"the api and worker configurations differ in [cluster] {k}")
    sel = svc.get("spec", {}).get("selector", {})
    labels = lambda w: w["spec"]["template"]["metadata"].get("labels", {})
    if not sel or any(labels(dep).get(k) != v for k, v in sel.items()):
        bad(f"{name(svc)}: its selector {sel} does not pick the api pods {labels(dep)}")
    if sel and all(labels(ds).get(k) == v for k, v in sel.items()):
        bad(f"{name(svc)}: its selector {sel} picks the worker pods too")
    for p in svc.get("spec", {}).get("ports", []):
        if not any(port_number(c, p.get("targetPort", p.get("port"))) for c in containers(dep)):
            bad(f"{name(svc)}: targetPort {p.get('targetPort')} is no port of the api container")
    for w in (ds, dep):
        ml = w["spec"].get("selector", {}).get("matchLabels", {})
        if not ml or any(labels(w).get(k) != v for k, v in ml.items()):
            bad(f"{name(w)}: its selector {ml} does not match its own pods")


def cap_lists(path):
    """The lists of capabilities a README (its table's rows | `CAP_X` |,
    each podman --cap-add A,B,... of its examples) or a script
    (caps=A,B,...) gives: each a set."""
    text = open(path).read()
    lists = []
    table = set(re.findall(r"^\|\s*`CAP_([A-Z_]+)`", text, re.M))
    if table:
        lists.append(table)
    for m in re.findall(r"(?:--cap-add[ =]|^caps=)([A-Z_,]+)", text, re.M):
        lists.append(set(m.split(",")))
    return lists


def caps_of_doc(path):
    return set().union(*cap_lists(path))


def check_worker_caps(d, docs_with_lists):
    docs = load(d)
    ds = one(docs, "DaemonSet")
    raw = open(os.path.join(d, "worker.yaml")).read()
    for c in containers(ds):
        sc = c.get("securityContext", {})
        caps = sc.get("capabilities", {})
        if caps.get("drop") != ["ALL"]:
            bad(f"{name(ds)}: capabilities drop {caps.get('drop')}, not [ALL]")
        add = set(a.removeprefix("CAP_") for a in caps.get("add", []))
        for doc in docs_with_lists:
            lists = cap_lists(doc)
            if not lists:
                bad(f"{doc} lists no capabilities")
            for listed in lists:
                if add != listed:
                    bad(f"{name(ds)} adds {sorted(add)}; {doc} lists {sorted(listed)}")
        for a in caps.get("add", []):
            if not re.search(r"^\s*-\s*" + re.escape(a) + r"\s+#\s*\S", raw, re.M):
                bad(f"worker.yaml: capability {a} without a comment saying why")
        if sc.get("privileged"):
            bad(f"{name(ds)}: privileged")
        if sc.get("allowPrivilegeEscalation") is False and "CAP_SYS_ADMIN" in caps.get("add", []):
            bad(f"{name(ds)}: the API server refuses allowPrivilegeEscalation false with CAP_SYS_ADMIN so spelled")
        if sc.get("runAsUser", 0) != 0:
            bad(f"{name(ds)}: not root (runAsUser {sc.get('runAsUser')}): sbx-privd needs root")
        ctx = {**ds["spec"]["template"]["spec"].get("securityContext", {}), **sc}
        if ctx.get("seccompProfile", {}).get("type") not in ("RuntimeDefault", "Localhost"):
            bad(f"{name(ds)}: seccomp {ctx.get('seccompProfile')}: the runtime's default filter is enough")
        if ctx.get("appArmorProfile", {}).get("type") != "Unconfined":
            bad(f"{name(ds)}: the runtime's AppArmor profile forbids the sandboxes' mounts: appArmorProfile Unconfined is missing")
    spec = ds["spec"]["template"]["spec"]
    for k in ("hostPID", "hostNetwork", "hostIPC"):
        if spec.get(k):
            bad(f"{name(ds)}: {k}")
    if spec.get("hostUsers") is False:
        bad(f"{name(ds)}: hostUsers false: sbx-privd's eBPF and cgroups need the host's user namespace")


def check_api_privileges(d):
    docs = load(d)
    dep = one(docs, "Deployment")
    spec = dep["spec"]["template"]["spec"]
    for c in containers(dep):
        ctx = {**spec.get("securityContext", {}), **c.get("securityContext", {})}
        want = {"runAsNonRoot": True, "runAsUser": 999, "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True}
        for k, v in want.items():
            if ctx.get(k) != v:
                bad(f"{name(dep)}: {k} is {ctx.get(k)}, not {v}")
        if ctx.get("privileged"):
            bad(f"{name(dep)}: privileged")
        caps = ctx.get("capabilities", {})
        if caps.get("drop") != ["ALL"] or caps.get("add"):
            bad(f"{name(dep)}: capabilities {caps}: an api node runs no sandbox and needs none")
        if ctx.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            bad(f"{name(dep)}: seccomp {ctx.get('seccompProfile')}, not RuntimeDefault")
        if ctx.get("appArmorProfile", {}).get("type") == "Unconfined":
            bad(f"{name(dep)}: AppArmor unconfined")
    for v in spec.get("volumes", []):
        if "hostPath" in v:
            bad(f"{name(dep)}: hostPath volume {v['name']}")
    for k in ("hostPID", "hostNetwork", "hostIPC"):
        if spec.get(k):
            bad(f"{name(dep)}: {k}")


def check_resources(d):
    docs = load(d)
    for w in workloads(docs):
        for c in containers(w):
            r = c.get("resources", {})
            for k in ("cpu", "memory"):
                if k not in r.get("requests", {}):
                    bad(f"{name(w)} container {c['name']}: no {k} request")
            if "memory" not in r.get("limits", {}):
                bad(f"{name(w)} container {c['name']}: no memory limit")


def check_images(d):
    docs = load(d)
    imgs = {c["image"] for w in workloads(docs) for c in containers(w)}
    if len(imgs) != 1:
        bad(f"the nodes run different images: {sorted(imgs)}")
    k = one(docs, "Kustomization")
    names = {i.get("name") for i in k.get("images", [])}
    for i in imgs:
        if i.rsplit(":", 1)[0] not in names:
            bad(f"image {i} is not in kustomization.yaml's images {sorted(names)}")


def write_configs(d, out):
    docs = load(d)
    for k, v in one(docs, "ConfigMap").get("data", {}).items():
        with open(os.path.join(out, k), "w") as fh:
            fh.write(v)
        print(k)


def main():
    if len(sys.argv) < 3:
        print(__doc__ or "usage: k8s-manifests.py CHECK DIR [ARG]...", file=sys.stderr)
        return 2
    check, d, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    if check == "caps-of":
        print(" ".join(sorted(caps_of_doc(d))))
        return 0
    fn = {
        "files": lambda: check_files(d),
        "probes": lambda: check_probes(d),
        "secret": lambda: check_secret(d),
        "roles": lambda: check_roles(d),
        "worker-caps": lambda: check_worker_caps(d, rest),
        "api-privileges": lambda: check_api_privileges(d),
        "resources": lambda: check_resources(d),
        "images": lambda: check_images(d),
        "configs": lambda: write_configs(d, rest[0]),
    }.get(check)
    if not fn:
        print(f"k8s-manifests.py: no check {check}", file=sys.stderr)
        return 2
    fn()
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
