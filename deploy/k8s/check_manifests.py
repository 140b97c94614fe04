#!/usr/bin/python3
"""check_manifests.py: checks baton's deployment files without a cluster or
a container engine (tests/integration/it_deploy_manifests.sh runs it).

  check_manifests.py K8S_DIR COMPOSE_FILE OUT_DIR

Kubernetes: every document is checked against the API schema that Debian's
python3-kubernetes client carries (its generated models): an unknown field,
a wrong type or a missing required field is an error naming the file, the
object and the field path. Then baton's own rules: the coordinator is a
Deployment of 2, the workers a StatefulSet whose BATON_ID is the pod name
(downward API), with a preStop hook and a PodDisruptionBudget selecting
them; selectors match their pod labels; every ConfigMap and key a pod mounts
exists; no password is a literal value or an argument.
Compose: baton's structural rules (3 ZooKeeper, 3 Kafka, PostgreSQL, 2
coordinators, 3 workers with distinct ids, the password as a secret file,
depends_on naming real services, bind-mounted files present).
The properties files found in ConfigMaps are written to OUT_DIR/NAME so the
caller can feed them to the real daemons. Exit 0 if all is well, 1 with one
line per problem otherwise, 2 on bad usage or a file that does not parse.
"""
import os
import re
import sys

import yaml

try:
    import kubernetes.client as k8s
except ImportError:  # the structural checks still run
    k8s = None

errors = []


def err(msg):
    errors.append(msg)


# --- schema check against the client's generated models ---------------------

PRIMS = {"str": str, "bool": bool, "float": (int, float), "object": object,
         "datetime": str, "date": str}


def check_type(val, typ, where):
    if val is None:
        return
    if typ == "int":
        if not isinstance(val, int) or isinstance(val, bool):
            err(f"{where}: expected an integer, got {val!r}")
        return
    if typ in PRIMS:
        if not isinstance(val, PRIMS[typ]) or (typ != "bool" and isinstance(val, bool) and typ != "object"):
            err(f"{where}: expected {typ}, got {val!r}")
        return
    m = re.fullmatch(r"list\[(.+)\]", typ)
    if m:
        if not isinstance(val, list):
            err(f"{where}: expected a list, got {type(val).__name__}")
            return
        for i, v in enumerate(val):
            check_type(v, m.group(1), f"{where}[{i}]")
        return
    m = re.fullmatch(r"dict\(str, (.+)\)", typ)
    if m:
        if not isinstance(val, dict):
            err(f"{where}: expected a map, got {type(val).__name__}")
            return
        for k, v in val.items():
            check_type(v, m.group(1), f"{where}.{k}")
        return
    cls = getattr(k8s, typ, None)
    if cls is None:
        err(f"{where}: schema has no type {typ}")
        return
    check_model(val, cls, where)


def check_model(val, cls, where):
    if not isinstance(val, dict):
        err(f"{where}: expected an object ({cls.__name__}), got {val!r}")
        return
    by_json = {j: a for a, j in cls.attribute_map.items()}
    kwargs = {}
    for key, v in val.items():
        attr = by_json.get(key)
        if attr is None:
            err(f"{where}: unknown field '{key}' in {cls.__name__}")
            continue
        check_type(v, cls.openapi_types[attr], f"{where}.{key}")
        kwargs[attr] = v
    # The generated constructors refuse a missing required field (and a
    # value outside an enum) with ValueError.
    try:
        cls(**kwargs)
    except ValueError as e:
        err(f"{where}: {e}")
    except TypeError:
        pass


def model_for(doc):
    api, kind = doc.get("apiVersion", ""), doc.get("kind", "")
    version = api.split("/")[-1]
    name = version[0].upper() + version[1:] + kind
    return getattr(k8s, name, None)


# --- Kubernetes ---------------------------------------------------------------

def load_all(path):
    try:
        with open(path) as f:
            return [d for d in yaml.safe_load_all(f) if d is not None]
    except yaml.YAMLError as e:
        print(f"{path}: not YAML: {e}", file=sys.stderr)
        sys.exit(2)


def env_of(container):
    return {e.get("name"): e for e in container.get("env") or []}


def pod_spec(doc):
    return (((doc.get("spec") or {}).get("template") or {}).get("spec")) or {}


def check_k8s(k8s_dir, out_dir):
    objs = []
    files = sorted(f for f in os.listdir(k8s_dir) if f.endswith((".yaml", ".yml")))
    kust = None
    for f in files:
        for doc in load_all(os.path.join(k8s_dir, f)):
            if not isinstance(doc, dict) or "kind" not in doc:
                err(f"{f}: a document without kind")
                continue
            if doc["kind"] == "Kustomization":
                kust = (f, doc)
                continue
            name = (doc.get("metadata") or {}).get("name", "?")
            where = f"{f}: {doc['kind']}/{name}"
            if k8s is not None:
                cls = model_for(doc)
                if cls is None:
                    err(f"{where}: unknown apiVersion/kind {doc.get('apiVersion')}/{doc['kind']}")
                else:
                    check_model(doc, cls, where)
            objs.append((f, doc))
    if kust is not None:
        listed = set(kust[1].get("resources") or [])
        for f in files:
            if f != kust[0] and f not in listed:
                err(f"{kust[0]}: does not list {f}")
        for r in listed:
            if not os.path.exists(os.path.join(k8s_dir, r)):
                err(f"{kust[0]}: lists {r}, which does not exist")

    def find(kind, name=None):
        return [d for _, d in objs if d["kind"] == kind and
                (name is None or d["metadata"].get("name") == name)]

    configmaps = {d["metadata"]["name"]: d.get("data") or {} for d in find("ConfigMap")}
    for name, data in configmaps.items():
        for key, text in data.items():
            if key.endswith(".properties"):
                with open(os.path.join(out_dir, key), "w") as f:
                    f.write(text)
    services = {d["metadata"]["name"]: d for d in find("Service")}
    pdbs = find("PodDisruptionBudget")

    def labels_match(sel, labels):
        ml = (sel or {}).get("matchLabels") or {}
        return bool(ml) and all(labels.get(k) == v for k, v in ml.items())

    def check_workload(d):
        name = d["metadata"]["name"]
        where = f"{d['kind']}/{name}"
        spec = d.get("spec") or {}
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not labels_match(spec.get("selector"), labels):
            err(f"{where}: selector does not match the pod template's labels")
        if not any(labels_match((p.get("spec") or {}).get("selector"), labels) for p in pdbs):
            err(f"{where}: no PodDisruptionBudget selects its pods")
        ps = pod_spec(d)
        vols = {v.get("name"): v for v in ps.get("volumes") or [] if isinstance(v, dict)}
        for c in ps.get("containers") or []:
            cw = f"{where} container {c.get('name')}"
            env = env_of(c)
            ref = ((env.get("BATON_ID") or {}).get("valueFrom") or {}).get("fieldRef") or {}
            if ref.get("fieldPath") != "metadata.name":
                err(f"{cw}: BATON_ID must come from the pod name (fieldRef metadata.name)")
            for e in env.values():
                if re.search(r"PASS|SECRET|TOKEN", e.get("name", ""), re.I) and "value" in e \
                        and not e.get("name", "").endswith("_FILE"):
                    err(f"{cw}: env {e['name']} has a literal value: use a Secret file")
            for a in (c.get("args") or []) + (c.get("command") or []):
                if re.search(r"password|passwd", str(a), re.I):
                    err(f"{cw}: a password on the command line: {a!r}")
            cfg = (env.get("BATON_CONFIG") or {}).get("value")
            mounts = {m.get("mountPath"): m for m in c.get("volumeMounts") or [] if isinstance(m, dict)}
            if cfg and cfg not in mounts:
                err(f"{cw}: BATON_CONFIG {cfg} is not mounted")
            for m in mounts.values():
                v = vols.get(m.get("name"))
                if v is None:
                    err(f"{cw}: mounts undefined volume '{m.get('name')}'")
                    continue
                cm = (v.get("configMap") or {}).get("name")
                if cm is not None:
                    if cm not in configmaps:
                        err(f"{cw}: volume '{m['name']}' names undefined ConfigMap '{cm}'")
                    elif m.get("subPath") and m["subPath"] not in configmaps[cm]:
                        err(f"{cw}: ConfigMap '{cm}' has no key '{m['subPath']}'")
        return ps

    coords = find("Deployment", "baton-coordinator")
    if len(coords) != 1:
        err("no Deployment baton-coordinator")
    for d in coords:
        check_workload(d)
        if (d.get("spec") or {}).get("replicas") != 2:
            err("Deployment/baton-coordinator: replicas must be 2")
    workers = find("StatefulSet", "baton-worker")
    if len(workers) != 1:
        err("no StatefulSet baton-worker")
    for d in workers:
        ps = check_workload(d)
        svc = services.get((d.get("spec") or {}).get("serviceName"))
        if svc is None or (svc.get("spec") or {}).get("clusterIP") != "None":
            err("StatefulSet/baton-worker: serviceName must name a headless Service")
        for c in ps.get("containers") or []:
            cmd = (((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command")
            if not cmd or "baton-prestop" not in " ".join(cmd):
                err("StatefulSet/baton-worker: no preStop hook running baton-prestop")
            wait = int((env_of(c).get("BATON_DRAIN_WAIT_S") or {}).get("value", "60"))
            grace = ps.get("terminationGracePeriodSeconds", 30)
            if isinstance(grace, int) and grace <= wait:
                err(f"StatefulSet/baton-worker: terminationGracePeriodSeconds {grace} "
                    f"must exceed the drain wait {wait}")


# --- compose ------------------------------------------------------------------

def check_compose(path):
    docs = load_all(path)
    if len(docs) != 1 or not isinstance(docs[0], dict):
        err(f"{path}: expected one YAML document")
        return
    svcs = docs[0].get("services") or {}
    base = os.path.dirname(path)

    def env(s):
        e = s.get("environment") or {}
        if isinstance(e, list):
            e = dict(x.split("=", 1) if "=" in x else (x, None) for x in e)
        return e

    def image(s):
        return str(s.get("image", ""))

    zks = [n for n, s in svcs.items() if image(s).startswith("zookeeper")]
    kafkas = [n for n, s in svcs.items() if "kafka" in image(s) and "KAFKA_NODE_ID" in env(s)]
    pgs = [n for n, s in svcs.items() if image(s).startswith("postgres")]
    coords = [n for n, s in svcs.items() if s.get("command") == ["coordinator"]]
    workers = [n for n, s in svcs.items() if s.get("command") == ["worker"]]
    for what, got, want in (("ZooKeeper", zks, 3), ("Kafka broker", kafkas, 3),
                            ("PostgreSQL", pgs, 1), ("coordinator", coords, 2), ("worker", workers, 3)):
        if len(got) != want:
            err(f"{path}: {len(got)} {what} services, want {want}")
    if len({env(svcs[n]).get("ZOO_MY_ID") for n in zks}) != len(zks):
        err(f"{path}: ZooKeeper services need distinct ZOO_MY_ID")
    if len({env(svcs[n]).get("KAFKA_NODE_ID") for n in kafkas}) != len(kafkas):
        err(f"{path}: Kafka services need distinct KAFKA_NODE_ID")
    ids = [env(svcs[n]).get("BATON_ID") for n in coords + workers]
    if None in ids or len(set(ids)) != len(ids):
        err(f"{path}: every coordinator and worker needs its own BATON_ID")
    secrets = docs[0].get("secrets") or {}
    for n in workers:
        e = env(svcs[n])
        f = e.get("BATON_PGPASSWORD_FILE", "")
        if not f.startswith("/run/secrets/") or os.path.basename(f) not in (svcs[n].get("secrets") or []):
            err(f"{path}: worker {n}: BATON_PGPASSWORD_FILE must name one of its secrets")
    for n, s in svcs.items():
        for k, v in env(s).items():
            if re.search(r"PASS|SECRET|TOKEN", k, re.I) and not k.endswith("_FILE"):
                err(f"{path}: service {n}: {k} has a literal value: use a secret file")
        for a in (s.get("command") or []) + (s.get("entrypoint") or []):
            if re.search(r"password|passwd", str(a), re.I):
                err(f"{path}: service {n}: a password on the command line: {a!r}")
        dep = s.get("depends_on") or {}
        for d in (dep if isinstance(dep, (list, dict)) else []):
            if d not in svcs:
                err(f"{path}: service {n} depends on unknown service '{d}'")
        for sec in s.get("secrets") or []:
            if (sec if isinstance(sec, str) else sec.get("source")) not in secrets:
                err(f"{path}: service {n} uses undefined secret '{sec}'")
        for v in s.get("volumes") or []:
            src = v.split(":", 1)[0] if isinstance(v, str) else v.get("source", "")
            if src.startswith((".", "/")) and not os.path.exists(os.path.join(base, src)):
                err(f"{path}: service {n} mounts {src}, which does not exist")
            elif isinstance(v, str) and not src.startswith((".", "/")) and src not in (docs[0].get("volumes") or {}):
                err(f"{path}: service {n} uses undefined volume '{src}'")
        b = s.get("build")
        if isinstance(b, dict):
            df = os.path.join(base, b.get("context", "."), b.get("dockerfile", "Dockerfile"))
            if not os.path.exists(df):
                err(f"{path}: service {n} builds from {df}, which does not exist")


def main():
    if len(sys.argv) != 4:
        print("usage: check_manifests.py K8S_DIR COMPOSE_FILE OUT_DIR", file=sys.stderr)
        return 2
    if k8s is None:
        err("python3-kubernetes is not installed: no schema check (deploy/setup.sh installs it)")
    # The schema errors name the cause; a rule check that trips over the same
    # malformed object must not hide them behind a traceback.
    for fn, args in ((check_k8s, (sys.argv[1], sys.argv[3])), (check_compose, (sys.argv[2],))):
        try:
            fn(*args)
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            err(f"{fn.__name__}: a malformed object stopped the rule checks ({type(e).__name__}: {e})")
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
