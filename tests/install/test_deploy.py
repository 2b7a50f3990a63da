"""The workshop container (deploy/workshop/) behaves: it starts as a non-root user,
reports health, stops within 2 s of SIGTERM, sends a small build context; the
Kubernetes manifests pass Kubernetes' own JSON schemas; in compose and Kubernetes,
Redis asks for a password the app's REDIS_URL carries and only the app reaches it.

There is no Docker engine here, so the image is not built. What the image would run is
run for real: the Dockerfile's ENTRYPOINT (exec form, read from the file) as a process
in the repository (the image's WORKDIR holds the same files), with a free port and a
temporary run folder in place of 8500 and /tmp/workshop, and, where this test runs as
root, as the unprivileged user ``nobody``; its HEALTHCHECK command (read from the file,
same port) must pass, then a SIGTERM must stop it and every child within 2 s. The
manifests are checked against the schemas kubernetes-validate ships (offline), strictly
(unknown fields fail)."""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import re
import runpy
import shutil
import signal
import site
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml

from resviz import __version__

ROOT = Path(__file__).resolve().parents[2]
WORKSHOP = ROOT / "deploy" / "workshop"
K8S_VERSION = "1.33.0"
NOBODY = 65534


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


DOCKERFILE = instructions(WORKSHOP / "Dockerfile")


def one(name: str) -> str:
    found = [args for word, args in DOCKERFILE if word == name]
    assert len(found) == 1, f"{name}: {len(found)} in the Dockerfile"
    return found[0]


def entrypoint() -> list[str]:
    args = json.loads(one("ENTRYPOINT"))  # exec form: a JSON array, or this fails
    assert isinstance(args, list) and all(isinstance(a, str) for a in args)
    return args


def healthcheck() -> list[str]:
    options, _, command = one("HEALTHCHECK").partition("CMD ")
    assert "--start-period" in options and "--interval" in options
    args = json.loads(command)
    assert isinstance(args, list)
    return args


def test_dockerfile_runs_exec_form_as_a_non_root_user_with_a_healthcheck() -> None:
    words = [w for w, _ in DOCKERFILE]
    assert "CMD" not in words, "a CMD beside the ENTRYPOINT would be its arguments"
    cmd = entrypoint()
    assert cmd[:2] == ["python", "deploy/workshop/serve.py"], cmd
    assert not {"sh", "bash", "-c", "/bin/sh"} & set(cmd), "a shell would swallow SIGTERM"
    # The user: created with a fixed uid, switched to after the last RUN, not root.
    user = one("USER")
    assert user not in ("root", "0") and not user.startswith("0:")
    assert words.index("USER") > max(i for i, w in enumerate(words) if w == "RUN")
    useradd = next(a for w, a in DOCKERFILE if w == "RUN" and "useradd" in a)
    assert re.search(rf"--uid (\d+) .*\b{user}$", useradd), useradd
    # Health: Streamlit's endpoint on the port the entry point serves and EXPOSE names.
    port = cmd[cmd.index("--port") + 1]
    assert one("EXPOSE") == port
    check = healthcheck()
    assert f"https://127.0.0.1:{port}/_stcore/health" in " ".join(check)  # HTTPS by default
    assert "--index-url" not in (ROOT / "requirements.txt").read_text()
    # supervisord (requirements-workshop.txt), which the entry point runs, is installed
    # with the app's packages and the same constraints.
    install = [a for w, a in DOCKERFILE if w == "RUN" and "-r requirements.txt" in a]
    assert install and "-r requirements-workshop.txt -c constraints.txt" in install[0]
    copied = [a.split() for w, a in DOCKERFILE if w == "COPY" and "constraints.txt" in a]
    assert copied and "requirements-workshop.txt" in copied[0], copied


def uid_of_image_user() -> int:
    useradd = next(a for w, a in DOCKERFILE if w == "RUN" and "useradd" in a)
    return int(re.search(r"--uid (\d+)", useradd).group(1))


# --------------------------------------------------------------------- .dockerignore
def ignored(rel: str, patterns: list[str]) -> bool:
    """Docker's rule for these patterns (no '!' exceptions): a path is left out when it,
    or a folder above it, matches; '**/' matches any number of folders."""
    parts = rel.split("/")
    for i in range(len(parts)):
        prefix = "/".join(parts[: i + 1])
        for pat in patterns:
            if fnmatch.fnmatchcase(prefix, pat):
                return True
            if pat.startswith("**/") and any(
                fnmatch.fnmatchcase("/".join(parts[j : i + 1]), pat[3:]) for j in range(i + 1)
            ):
                return True
    return False


def build_context() -> tuple[list[str], int]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [ln.strip().lstrip("/") for ln in lines if ln.strip() and not ln.startswith("#")]
    assert not [p for p in patterns if p.startswith("!")], "exceptions are not modelled here"
    files, size = [], 0
    for folder, dirs, names in os.walk(ROOT):
        rel_dir = os.path.relpath(folder, ROOT)
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirs[:] = [d for d in dirs if not ignored(rel_dir + d, patterns)]
        for name in names:
            rel = rel_dir + name
            if not ignored(rel, patterns):
                files.append(rel)
                size += os.lstat(ROOT / rel).st_size
    return files, size


def test_dockerignore_sends_the_app_and_nothing_of_a_dev_checkout() -> None:
    files, size = build_context()
    tops = {f.split("/")[0] for f in files}
    assert not tops & {".git", ".venv", "artifacts", "tests", "benchmarks", ".pytest_cache"}
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    needed = {"requirements.txt", "constraints.txt", "streamlit_app.py"}
    needed |= {"deploy/workshop/serve.py", ".streamlit/config.toml", "resviz/__init__.py"}
    needed |= {"requirements-workshop.txt", "deploy/workshop/health.py"}
    needed |= {"deploy/workshop/start_nginx.py"}
    assert needed <= set(files), needed - set(files)
    for folder in ("app_pages", "ui", "lessons", "resviz"):  # every file the app imports
        tracked = subprocess.run(
            ["git", "ls-files", folder], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
        assert set(tracked) <= set(files), set(tracked) - set(files)
    assert size < 20 * 2**20, f"build context {size / 2**20:.1f} MiB"


# ----------------------------------------------------------- the entry point, for real
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unprivileged() -> tuple[str, dict[str, str], dict]:
    """The interpreter, environment and Popen arguments that run the server without
    root: as ``nobody`` where this test is root (with a Python that user may run and
    this environment's packages on its path), else as the user running the test."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "REPLICAS": "1"}
    if os.geteuid() != 0:
        return sys.executable, env, {}
    packages = os.pathsep.join([*site.getsitepackages(), str(ROOT)])
    env["PYTHONPATH"] = packages
    drop = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
    for python in (os.path.realpath(sys.executable), "/usr/bin/python3.11"):
        try:
            probe = subprocess.run(
                [python, "-c", "import streamlit, torch"], env=env, capture_output=True, **drop
            )
        except PermissionError:  # a folder above it is closed to that user
            continue
        if probe.returncode == 0:
            return python, env, drop
    pytest.fail("no Python 3.11 that the user nobody may run with this environment's packages")


def uids(pid: int) -> set[int]:
    """The real and effective uids of a process and of all its descendants."""
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except FileNotFoundError:
            continue
        uid_line = next(ln for ln in status.splitlines() if ln.startswith("Uid:"))
        found |= {int(u) for u in uid_line.split()[1:3]}
        todo += [int(c) for c in children]
    return found


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except FileNotFoundError:
            continue
        out += kids
        todo += kids
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def folders_for(root: Path, drop: dict, *names: str) -> list[Path]:
    """New folders under ``root``, owned by the user the server runs as (``drop``)."""
    made = []
    for name in names:
        (root / name).mkdir()
        if drop:
            os.chown(root / name, NOBODY, NOBODY)
        made.append(root / name)
    return made


@pytest.fixture
def open_tmp():
    """A temporary folder that another user may enter (pytest's own is the owner's only)."""
    path = Path(tempfile.mkdtemp(prefix="resviz-deploy-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.browser  # starts nginx and a Streamlit replica
def test_entrypoint_runs_unprivileged_reports_health_and_stops_within_2s_of_sigterm(
    open_tmp: Path,
) -> None:
    tmp_path = open_tmp
    python, env, drop = unprivileged()
    port = free_port()
    run_dir, home = folders_for(tmp_path, drop, "run", "home")
    env["HOME"] = str(home)
    cmd = entrypoint()
    cmd[0] = python
    cmd[cmd.index("--port") + 1] = str(port)
    cmd[cmd.index("--run-dir") + 1] = str(run_dir)
    check = healthcheck()
    check[0] = python
    check = [c.replace(":8500/", f":{port}/") for c in check]
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=log, **drop)
    try:
        deadline = time.monotonic() + 240
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            if subprocess.run(check, capture_output=True, env=env, **drop).returncode == 0:
                break
            assert time.monotonic() < deadline, "the HEALTHCHECK never passed"
            time.sleep(1)
        tree = [server.pid, *descendants(server.pid)]
        # supervisord (serve.py's process, exec'd), a Streamlit replica, health.py, and
        # nginx's master and worker.
        assert len(tree) >= 5, "expected supervisord, a replica, health.py and nginx"
        if drop:
            assert uids(server.pid) == {NOBODY}, uids(server.pid)
        else:
            assert 0 not in uids(server.pid)

        start = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
        while any(alive(p) for p in tree) and time.monotonic() - start < 10:
            time.sleep(0.02)
        stopped = time.monotonic() - start
        print(f"\nSIGTERM to every process gone: {stopped:.2f} s ({len(tree)} processes)")
        assert not [p for p in tree if alive(p)], "processes left after SIGTERM"
        assert server.returncode == 0
        assert stopped < 2.0, f"stopped {stopped:.2f} s after SIGTERM"
        failed = subprocess.run(check, capture_output=True, env=env, **drop)
        assert failed.returncode != 0, "the HEALTHCHECK still passes after the stop"
    finally:
        if server.poll() is None:
            server.kill()
        for p in descendants(server.pid):
            os.kill(p, signal.SIGKILL)


# ------------------------------------------------------------------------ Kubernetes
MANIFESTS = list(yaml.safe_load_all((WORKSHOP / "kubernetes.yaml").read_text()))


def kind(name: str) -> dict:
    """The app's own object of that kind (the Redis service has its own, named redis)."""
    (doc,) = [d for d in MANIFESTS if d and d["kind"] == name and d["metadata"]["name"] != "redis"]
    return doc


@pytest.mark.parametrize(
    "doc", MANIFESTS, ids=[f"{d['kind']}-{d['metadata']['name']}" for d in MANIFESTS]
)
def test_manifest_passes_the_kubernetes_schema(doc: dict) -> None:
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


# Pod Security Standards, "restricted" (kubernetes.io/docs/concepts/security/
# pod-security-standards): the rules of the baseline and restricted profiles that a
# pod template can break.
ALLOWED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
    "persistentVolumeClaim", "projected", "secret",
}  # fmt: skip


def restricted_violations(pod: dict) -> list[str]:
    out = []
    ctx = pod.get("securityContext", {})
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(flag):
            out.append(flag)
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= ALLOWED_VOLUMES:
            out.append(f"volume {volume['name']}: {sorted(kinds)}")
    if ctx.get("runAsUser") == 0:
        out.append("pod runAsUser 0")
    for c in pod.get("initContainers", []) + pod["containers"]:
        sc = c.get("securityContext", {})
        name = c["name"]
        if sc.get("privileged"):
            out.append(f"{name}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{name}: allowPrivilegeEscalation not false")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            out.append(f"{name}: capabilities not dropped (ALL)")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            out.append(f"{name}: capabilities added")
        if not sc.get("runAsNonRoot", ctx.get("runAsNonRoot")):
            out.append(f"{name}: runAsNonRoot not true")
        if sc.get("runAsUser", ctx.get("runAsUser")) == 0:
            out.append(f"{name}: runAsUser 0")
        seccomp = sc.get("seccompProfile", ctx.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{name}: seccompProfile {seccomp}")
        if c.get("ports") and any(p.get("hostPort") for p in c["ports"]):
            out.append(f"{name}: hostPort")
    return out


@pytest.mark.parametrize("app", ["resviz", "redis"])
def test_every_pod_passes_pod_security_restricted(app: str) -> None:
    (deploy,) = [
        d for d in MANIFESTS if d and d["kind"] == "Deployment" and d["metadata"]["name"] == app
    ]
    assert restricted_violations(deploy["spec"]["template"]["spec"]) == []


def test_the_restricted_check_rejects_what_the_profile_would() -> None:
    pod = json.loads(json.dumps(kind("Deployment")["spec"]["template"]["spec"]))
    pod["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": False}
    pod["securityContext"].pop("seccompProfile")
    pod["hostNetwork"] = True
    pod["volumes"] = [{"name": "h", "hostPath": {"path": "/"}}]
    found = restricted_violations(pod)
    assert "hostNetwork" in found
    assert "resviz: capabilities not dropped (ALL)" in found
    assert "resviz: seccompProfile None" in found
    assert any(v.startswith("volume h") for v in found), found


def test_the_schema_check_rejects_what_kubernetes_would() -> None:
    broken = json.loads(json.dumps(kind("Deployment")))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGett"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)
    broken = json.loads(json.dumps(kind("Deployment")))
    broken["spec"]["replicas"] = "three"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_deployment_pins_the_release_probes_health_and_runs_as_the_image_user() -> None:
    pod = kind("Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == f"resviz:{__version__}", container["image"]
    command = container["command"]
    port = int(command[command.index("--server.port") + 1])
    assert [p["containerPort"] for p in container["ports"]] == [port]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/_stcore/health", "port": port}, probe
    # A hung process is restarted after as long as serve.py gives one on one machine.
    live = container["livenessProbe"]
    serve = runpy.run_path(str(WORKSHOP / "serve.py"))
    assert live["periodSeconds"] * live["failureThreshold"] == serve["HUNG_AFTER_S"]
    assert live["timeoutSeconds"] <= live["periodSeconds"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == uid_of_image_user()
    assert pod["terminationGracePeriodSeconds"] >= 2
    assert kind("Service")["spec"]["ports"][0]["targetPort"] == port


def test_a_pod_is_one_streamlit_process_of_the_same_image() -> None:
    """No nginx and no supervisor inside a pod: the image's own Python runs Streamlit on
    the checkout's entry point (the image's WORKDIR), all of Streamlit's other settings
    the image's .streamlit/config.toml; the kubelet and the Ingress do the rest."""
    (container,) = kind("Deployment")["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[:5] == ["python", "-m", "streamlit", "run", "streamlit_app.py"]
    assert "serve.py" not in " ".join(command) and "args" not in container
    assert (ROOT / "streamlit_app.py").is_file() and (ROOT / ".streamlit" / "config.toml").is_file()
    assert command[command.index("--server.address") + 1] == "0.0.0.0"
    env = {e["name"]: e for e in container["env"]}
    # Every pod signs cookies with one key, from a Secret made by hand (as Redis's).
    ref = env["STREAMLIT_SERVER_COOKIE_SECRET"]["valueFrom"]["secretKeyRef"]
    text = (WORKSHOP / "kubernetes.yaml").read_text()
    assert f"kubectl create secret generic {ref['name']} --from-literal={ref['key']}=" in text
    assert env["RESVIZ_MODEL_FOLDERS"]["value"] == "0"
    assert env["RESVIZ_CLIENT_HEADER"]["value"] == "X-Real-IP"
    assert int(container["resources"]["limits"]["cpu"]) == 1


@pytest.mark.browser  # starts a Streamlit server
def test_the_pods_command_serves_the_app_unprivileged_and_stops_at_sigterm(
    open_tmp: Path,
) -> None:
    """The same image both ways: the manifest's command, run as the image's files lie
    (the checkout) by an unprivileged user with the manifest's environment (the rooms in
    a SQLite file here, no Redis), answers the probes' health endpoint and serves the
    app; SIGTERM stops it within the pod's grace period."""
    python, env, drop = unprivileged()
    env.pop("REPLICAS")
    (container,) = kind("Deployment")["spec"]["template"]["spec"]["containers"]
    for item in container["env"]:
        if "value" in item and not item["name"].startswith("REDIS"):
            env[item["name"]] = item["value"]
    env["STREAMLIT_SERVER_COOKIE_SECRET"] = "ab" * 32
    data, home = folders_for(open_tmp, drop, "data", "home")
    env.update(HOME=str(home), RESVIZ_DATA_DIR=str(data))
    port = free_port()
    cmd = list(container["command"])
    assert cmd[0] == "python"
    cmd[0] = python
    cmd[cmd.index("--server.port") + 1] = str(port)
    cmd[cmd.index("--server.address") + 1] = "127.0.0.1"  # the test's: not the world's
    probe = container["livenessProbe"]["httpGet"]["path"]
    log = (open_tmp / "pod.log").open("w")
    pod = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=log, **drop)
    try:
        deadline = time.monotonic() + 240
        while True:
            assert pod.poll() is None, (open_tmp / "pod.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{probe}", timeout=2) as r:
                    if r.status == 200 and r.read() == b"ok":
                        break
            except (OSError, urllib.error.URLError):
                pass
            assert time.monotonic() < deadline, "the health endpoint never answered"
            time.sleep(1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/workshop", timeout=10) as r:
            assert r.status == 200 and b"<title>" in r.read()
        assert 0 not in uids(pod.pid) and descendants(pod.pid) == []  # one process, no root
        start = time.monotonic()
        pod.send_signal(signal.SIGTERM)
        pod.wait(timeout=10)
        stopped = time.monotonic() - start
        print(f"\nthe pod's Streamlit stopped {stopped:.2f} s after SIGTERM")
        grace = kind("Deployment")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert stopped < grace
    finally:
        if pod.poll() is None:
            pod.kill()


def test_browsers_speak_tls_to_the_ingress_and_only_the_ingress_reaches_the_pods() -> None:
    """The pods serve plain HTTP only because the Ingress speaks TLS to the browsers,
    redirects plain HTTP and marks the cookies Secure; only the Ingress controller's
    pods may connect to them, so the X-Real-IP the app reads is the Ingress's."""
    ingress = kind("Ingress")
    assert ingress["spec"]["tls"] == [{"secretName": "resviz-tls"}]
    notes = ingress["metadata"]["annotations"]
    assert notes["nginx.ingress.kubernetes.io/ssl-redirect"] == "true"
    assert notes["nginx.ingress.kubernetes.io/session-cookie-secure"] == "true"
    assert notes["nginx.ingress.kubernetes.io/proxy-cookie-flags"] == "~ secure"
    (policy,) = [
        d for d in MANIFESTS if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "resviz"
    ]
    app_labels = kind("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"] == {"matchLabels": app_labels}
    (rule,) = policy["spec"]["ingress"]
    (source,) = rule["from"]
    assert set(source) == {"namespaceSelector"}
    (container,) = kind("Deployment")["spec"]["template"]["spec"]["containers"]
    assert rule["ports"] == [{"protocol": "TCP", "port": container["ports"][0]["containerPort"]}]
    # The image itself, run as it is (docker run): HTTPS, its health check too.
    assert "--http" not in entrypoint()
    assert any("https://127.0.0.1:8500/" in part for part in healthcheck())


def test_ingress_keeps_sessions_on_their_pod_when_it_rescales() -> None:
    notes = kind("Ingress")["metadata"]["annotations"]
    assert notes["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert notes["nginx.ingress.kubernetes.io/affinity-mode"] == "persistent"
    backend = kind("Ingress")["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == kind("Service")["metadata"]["name"]


def test_compose_builds_the_dockerfile() -> None:
    compose = yaml.safe_load((WORKSHOP / "compose.yaml").read_text())
    builds = [s["build"] for s in compose["services"].values() if "build" in s]
    assert builds and all(b["dockerfile"] == "deploy/workshop/Dockerfile" for b in builds)
    assert all((WORKSHOP / b["context"]).resolve() == ROOT for b in builds)


# ------------------------------------------- Redis: a password, reached only by the app
# Anything that reaches Redis could otherwise rewrite a room's presenter secret. Both
# layouts start Redis with --requirepass from one secret, give the app a REDIS_URL
# carrying it, and let nothing but the app reach Redis; a real redis-server started
# with each file's own arguments serves the app's store (open_store, as the app opens
# it) through each file's own REDIS_URL, and refuses it without the password.
COMPOSE = yaml.safe_load((WORKSHOP / "compose.yaml").read_text())
SAMPLE_PASSWORD = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


def compose_value(text: str, env: dict[str, str]) -> str:
    """Compose's interpolation of ``text``: ``$$``, ``${VAR}`` and ``${VAR:?message}``
    (an error, with that message, where VAR is unset or empty); other forms fail here."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, required, message = m.group(1), m.group(2), m.group(3)
        if required and not env.get(name):
            raise ValueError(message)
        return env.get(name, "")

    pattern = r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:\?)([^}]*))?\}"
    assert "$" not in re.sub(pattern, "", text), f"unmodelled interpolation in {text!r}"
    return re.sub(pattern, sub, text)


def k8s_value(text: str, env: dict[str, str]) -> str:
    """Kubernetes' expansion of ``$(VAR)`` in a container's env values and args (``$$``
    escapes; a variable not defined is left as written)."""
    return re.sub(
        r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
        lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
        text,
    )


def compose_redis() -> tuple[list[str], list[str]]:
    """The redis service's arguments and every node's REDIS_URL, as written."""
    command = COMPOSE["services"]["redis"]["command"]
    assert command[0] == "redis-server", command
    nodes = [s for s in COMPOSE["services"].values() if "build" in s]
    return command[1:], [n["environment"]["REDIS_URL"] for n in nodes]


def redis_deployment() -> dict:
    (doc,) = [
        d for d in MANIFESTS if d["kind"] == "Deployment" and d["metadata"]["name"] == "redis"
    ]
    return doc


def k8s_redis() -> tuple[dict, list[dict]]:
    """The redis container and the app container's env list."""
    (redis_c,) = redis_deployment()["spec"]["template"]["spec"]["containers"]
    (app_c,) = kind("Deployment")["spec"]["template"]["spec"]["containers"]
    return redis_c, app_c["env"]


def test_compose_redis_requires_a_password_and_is_reached_only_by_the_nodes() -> None:
    args, urls = compose_redis()
    given = args[args.index("--requirepass") + 1]
    assert given == "${REDIS_PASSWORD:?set REDIS_PASSWORD}"  # compose stops without one
    with pytest.raises(ValueError, match="set REDIS_PASSWORD"):
        compose_value(given, {})
    assert urls and len(urls) == len(COMPOSE["services"]) - 2  # every node (not redis, front)
    for url in urls:
        with pytest.raises(ValueError, match="set REDIS_PASSWORD"):
            compose_value(url, {})
        parts = urlsplit(compose_value(url, {"REDIS_PASSWORD": SAMPLE_PASSWORD}))
        assert (parts.scheme, parts.hostname, parts.port) == ("redis", "redis", 6379)
        assert parts.password == SAMPLE_PASSWORD
    redis_svc = COMPOSE["services"]["redis"]
    assert not {"ports", "expose", "network_mode"} & set(redis_svc), "redis is published"
    nets = set(redis_svc["networks"])
    assert nets and all(COMPOSE["networks"][n].get("internal") is True for n in nets)
    on_them = {n for n, s in COMPOSE["services"].items() if nets & set(s.get("networks", []))}
    assert on_them == {"redis"} | {n for n, s in COMPOSE["services"].items() if "build" in s}


def test_kubernetes_redis_requires_the_secrets_password_and_only_the_app_reaches_it() -> None:
    redis_c, app_env = k8s_redis()
    args = redis_c["args"]
    assert args[args.index("--requirepass") + 1] == "$(REDIS_PASSWORD)"
    (from_secret,) = [e for e in redis_c["env"] if e["name"] == "REDIS_PASSWORD"]
    ref = from_secret["valueFrom"]["secretKeyRef"]
    assert ref.get("optional") is not True  # no Secret, no start (never an open Redis)
    # The Secret is made once, by hand, with the command the file gives.
    text = (WORKSHOP / "kubernetes.yaml").read_text()
    assert f"kubectl create secret generic {ref['name']} --from-literal={ref['key']}=" in text
    # The app: REDIS_PASSWORD from the same Secret, defined before REDIS_URL uses it.
    names = [e["name"] for e in app_env]
    assert names.index("REDIS_PASSWORD") < names.index("REDIS_URL")
    assert app_env[names.index("REDIS_PASSWORD")]["valueFrom"]["secretKeyRef"] == ref
    url = k8s_value(app_env[names.index("REDIS_URL")]["value"], {"REDIS_PASSWORD": SAMPLE_PASSWORD})
    parts = urlsplit(url)
    assert (parts.hostname, parts.port, parts.password) == ("redis", 6379, SAMPLE_PASSWORD)
    # Not exposed: a ClusterIP Service, no Ingress to it, and a NetworkPolicy that lets
    # only the app's pods connect.
    (svc,) = [d for d in MANIFESTS if d["kind"] == "Service" and d["metadata"]["name"] == "redis"]
    assert svc["spec"].get("type", "ClusterIP") == "ClusterIP"
    assert not {"externalIPs", "loadBalancerIP"} & set(svc["spec"])
    assert all("nodePort" not in p for p in svc["spec"]["ports"])
    backends = [
        p["backend"]["service"]["name"]
        for d in MANIFESTS
        if d["kind"] == "Ingress"
        for r in d["spec"]["rules"]
        for p in r["http"]["paths"]
    ]
    assert "redis" not in backends
    redis_labels = redis_deployment()["spec"]["template"]["metadata"]["labels"]
    app_labels = kind("Deployment")["spec"]["template"]["metadata"]["labels"]
    (policy,) = [
        d for d in MANIFESTS if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "redis"
    ]
    spec = policy["spec"]
    assert spec["podSelector"] == {"matchLabels": redis_labels}
    assert "Ingress" in spec["policyTypes"]
    (rule,) = spec["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": app_labels}}]
    assert rule["ports"] == [{"protocol": "TCP", "port": 6379}]


@pytest.mark.parametrize("layout", ["compose", "kubernetes"])
def test_a_real_redis_with_the_files_arguments_serves_the_app_only_with_the_password(
    layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.unit.ui.test_room_store_setup import redis_server_with
    from ui.room.store import RedisStore, StoreUnavailable, open_store

    secret = {"REDIS_PASSWORD": SAMPLE_PASSWORD}
    if layout == "compose":
        args, urls = compose_redis()
        args = [compose_value(a, secret) for a in args]
        url = compose_value(urls[0], secret)
    else:
        redis_c, app_env = k8s_redis()
        args = [k8s_value(a, secret) for a in redis_c["args"]]
        url = k8s_value(next(e["value"] for e in app_env if e["name"] == "REDIS_URL"), secret)
    monkeypatch.delenv("RESVIZ_ROOM_DB", raising=False)
    with redis_server_with(tmp_path, args) as port:
        here = url.replace("@redis:6379/", f"@127.0.0.1:{port}/")
        assert here != url
        monkeypatch.setenv("REDIS_URL", here)
        store = open_store()
        assert isinstance(store, RedisStore)
        room, secret_ = store.create("residuals")
        assert store.is_presenter(room.code, secret_)
        monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{port}/0")  # no password
        caplog.set_level(logging.ERROR, logger="ui.room.store")
        with pytest.raises(StoreUnavailable):
            open_store()
    (line,) = [r.getMessage() for r in caplog.records if r.name == "ui.room.store"]
    assert line.startswith(f"workshop rooms: cannot write redis://127.0.0.1:{port}/0: ")
    assert "AuthenticationError" in line and SAMPLE_PASSWORD not in caplog.text


def test_compose_restarts_every_service_that_exits() -> None:
    """supervisord (serve.py's) heals a replica or nginx inside a node; Docker restarts a
    node (or the store, or the front) whose main process exits, as Kubernetes'
    restartPolicy does."""
    services = yaml.safe_load((WORKSHOP / "compose.yaml").read_text())["services"]
    assert {n: s.get("restart") for n, s in services.items()} == dict.fromkeys(
        services, "unless-stopped"
    )
