"""Fixtures of the Python package's tests: the CLI binary, a generated BAM,
the golden snp-pileup inputs, and a FASTQ for the k-mer tests; and
`require`, the one way a test goes without what it compares against."""

import gzip
import importlib
import os
import random
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def under_ci() -> bool:
    """`CI=true` (set by .ci/run, as by most CI services)."""
    return os.environ.get("CI") in ("true", "1")


def require(available: bool, what: str) -> None:
    """The one way a test goes without something it compares against (a
    tool, a Python module, reference data): nothing happens when it is
    `available`. Otherwise, under CI the test fails naming what is missing
    (a CI run that skips its comparisons proves nothing); elsewhere it is
    skipped, counted in pytest's summary line ("N skipped") and listed with
    `-rs` (scripts/test.sh passes it)."""
    if available:
        return
    if under_ci():
        pytest.fail(f"{what} is missing (CI=true: a test may not skip its comparison)", pytrace=False)
    pytest.skip(f"{what} is missing", allow_module_level=True)


def require_module(name: str):
    """The module `name`, imported, through `require`."""
    try:
        return importlib.import_module(name)
    except ImportError:
        require(False, f"Python module {name} (pip install '.[test]')")


def require_tool(name: str, package: str) -> str:
    """The path of the program `name`, through `require` (`package`: the
    Debian package that has it)."""
    path = shutil.which(name)
    require(path is not None, f"{name} (Debian package {package})")
    return path


def target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/fasthts-target"))


@pytest.fixture(scope="session")
def cli() -> str:
    """The `fasthts` binary (FASTHTS_BIN, or the release build of the
    cargo target dir, which scripts/test.sh builds before running pytest)."""
    b = os.environ.get("FASTHTS_BIN") or str(target_dir() / "release" / "fasthts")
    require(Path(b).is_file(), f"the fasthts binary {b} (cargo build --release -p fasthts-cli)")
    return b


def run(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, **kw)


def generate_bam(out: Path, seed: int, reads: int) -> Path:
    """A sorted BAM of `reads` records made by scripts/gen-bam.sh (needs
    samtools), indexed."""
    require_tool("samtools", "samtools")  # scripts/gen-bam.sh needs it
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir()))
    tg = target_dir() / "release" / "fasthts-testgen"
    if tg.is_file():
        env["FASTHTS_TESTGEN"] = str(tg)
    subprocess.run(["bash", str(ROOT / "scripts/gen-bam.sh"), str(out), "--seed", str(seed), "--reads", str(reads)], check=True, env=env)
    import fasthts

    fasthts.index(str(out))
    return out


@pytest.fixture(scope="session")
def gen_bam(tmp_path_factory) -> Path:
    """A generated, sorted, indexed BAM of a few thousand records
    (scripts/gen-bam.sh; needs samtools)."""
    return generate_bam(tmp_path_factory.mktemp("gen") / "gen.bam", seed=7, reads=3000)


@pytest.fixture(scope="session")
def golden() -> Path:
    """FACETS' snp-pileup inputs and outputs, part of the repository
    (tests/data/golden/snp-pileup; see its README)."""
    d = ROOT / "tests/data/golden/snp-pileup"
    assert (d / "normal.bam").is_file(), f"{d}: golden data missing from the checkout"
    return d


@pytest.fixture(scope="session")
def fastq(tmp_path_factory) -> Path:
    """Reads of a random 20 kb genome, with a few very abundant reads (so
    some k-mers pass 255: bigcount) and some N bases."""
    rng = random.Random(11)
    genome = "".join(rng.choice("ACGT") for _ in range(20000))
    d = tmp_path_factory.mktemp("reads")
    p = d / "reads.fq"
    with open(p, "w") as f:
        for i in range(6000):
            if i % 20 == 0:
                s = genome[1000:1100]  # ~300 copies
            else:
                a = rng.randrange(0, len(genome) - 100)
                s = genome[a : a + 100]
            if i % 97 == 0:
                s = s[:50] + "N" + s[51:]
            f.write(f"@r{i}\n{s}\n+\n{'I' * len(s)}\n")
    return p


@pytest.fixture(scope="session")
def fastq_gz(fastq) -> Path:
    p = fastq.with_suffix(".fq.gz")
    with open(fastq, "rb") as src, gzip.open(p, "wb") as dst:
        dst.write(src.read())
    return p


def write_bgzf(data: bytes, path: Path, block: int = 4000) -> None:
    """BGZF (blocks of `block` input bytes, small so that files have many
    blocks), with the EOF marker block."""
    import struct
    import zlib

    out = bytearray()
    for i in range(0, len(data) + 1, block):
        chunk = data[i : i + block]
        if not chunk and i:
            break
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        cdata = c.compress(chunk) + c.flush()
        out += b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\xff\x06\x00BC\x02\x00"
        out += struct.pack("<H", len(cdata) + 25) + cdata + struct.pack("<II", zlib.crc32(chunk), len(chunk))
    out += bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
    path.write_bytes(bytes(out))


@pytest.fixture(scope="session")
def fastq_bgzf(fastq) -> Path:
    p = fastq.with_suffix(".bgzf.fq.gz")
    write_bgzf(fastq.read_bytes(), p)
    return p


@pytest.fixture(scope="module")
def no_reference_lookup():
    """htslib looks for CRAM references only where the file or the call
    says (REF_PATH/REF_CACHE point nowhere for the module's tests; set
    before a module's dask workers start: they inherit it). Modules use it
    with `pytestmark = pytest.mark.usefixtures("no_reference_lookup")`."""
    saved = {k: os.environ.get(k) for k in ("REF_PATH", "REF_CACHE")}
    os.environ["REF_PATH"] = os.environ["REF_CACHE"] = "/nonexistent/%s"
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


class Nginx:
    """nginx on a free loopback port serving the directory `www` with byte
    ranges (as crates/fasthts-cli/tests/cli/remote.rs starts it): one
    process (`master_process off`: killing a master would leave its
    workers), stopped by `stop`. Each request is logged with its status and
    the body bytes sent (`requests`)."""

    def __init__(self, binary: str, root: Path):
        self.root = root
        self.www = root / "www"
        self.www.mkdir(parents=True)
        (root / "tmp").mkdir()
        for _attempt in range(5):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            conf = (
                f"master_process off;\nerror_log {root}/error.log;\npid {root}/nginx.pid;\n"
                "events { worker_connections 256; }\n"
                "http {\n  log_format bytes '$request $status $body_bytes_sent $http_range';\n"
                f"  access_log {root}/access.log bytes;\n"
                + "".join(f"  {t}_temp_path {root}/tmp;\n" for t in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"])
                + f"  server {{ listen 127.0.0.1:{self.port}; root {self.www}; }}\n}}\n"
            )
            (root / "nginx.conf").write_text(conf)
            self.process = subprocess.Popen(
                [binary, "-p", str(root), "-c", str(root / "nginx.conf"), "-g", "daemon off;"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            started = time.monotonic()
            while time.monotonic() - started < 10 and self.process.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return
                except OSError:
                    time.sleep(0.02)
            # The port was taken meanwhile, or nginx did not start: again.
            self.stop()
        log = root / "error.log"
        raise RuntimeError(f"nginx did not start: {log.read_text() if log.exists() else ''}")

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def serve(self, path, name: str) -> str:
        """Copies `path` into the served directory as `name`; its URL."""
        shutil.copy(path, self.www / name)
        return self.url(name)

    def requests(self, name: str):
        """`(status, body bytes)` of each request of `name` logged so far."""
        log = self.root / "access.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return [(int(s), int(b)) for _, path, _, s, b, _ in (l.split(" ") for l in lines) if path == f"/{name}"]

    def ranges(self, name: str):
        """The `Range` header of each request of `name` logged so far."""
        log = self.root / "access.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return [r for _, path, _, _, _, r in (l.split(" ") for l in lines) if path == f"/{name}"]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


@pytest.fixture(scope="session")
def nginx(tmp_path_factory):
    """nginx serving a temporary directory on loopback (`Nginx`), through
    `require` (CI=true fails without it; scripts/test.sh installs
    nginx-light)."""
    found = [p for p in ["/usr/sbin/nginx", "/usr/bin/nginx"] if Path(p).is_file()]
    require(bool(found), "nginx (Debian package nginx-light)")
    server = Nginx(found[0], tmp_path_factory.mktemp("nginx"))
    yield server
    server.stop()
