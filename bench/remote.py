"""bench/run.py --jobs remote: the bench BAM over HTTP (issue 38's bars).

nginx serves the BAM's directory in place (no copy) on a free port, with an
access log of the body bytes sent per request. Jobs, each against samtools
at the same -@ on the same URL, outputs compared first:

- `flagstat` of the URL (the whole file: the bytes fetched are reported
  against the file's size; the bar is 5 % over it at most);
- `view -c` of 20 random 20 kb regions (seeded) on the URL (bytes fetched
  by each tool reported; the bar is samtools' + 64 kB at most).

With --rtt-ms N the clients reach nginx through a proxy that gives each
connection an N ms round trip (`DelayProxy`), as to a remote bucket: the
concurrency of range requests shows there.
"""
import os, random, shutil, socket, subprocess, sys, tempfile, time



class Nginx:
    """nginx serving `directory` (in place) on a free port of `address`;
    one process (`master_process off`), stopped by `stop`."""

    def __init__(self, directory, address="127.0.0.1"):
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.root = tempfile.mkdtemp(prefix="fasthts-bench-nginx-")
        os.makedirs(os.path.join(self.root, "tmp"))
        self.log = os.path.join(self.root, "access.log")
        with socket.socket() as s:
            s.bind((address, 0))
            self.port = s.getsockname()[1]
        self.base = f"http://{address}:{self.port}"
        temp = "".join(f"  {t}_temp_path {self.root}/tmp;\n" for t in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"])
        with open(os.path.join(self.root, "nginx.conf"), "w") as f:
            f.write(f"master_process off;\nerror_log {self.root}/error.log;\npid {self.root}/nginx.pid;\n"
                    "events { worker_connections 1024; }\n"
                    "http {\n  log_format bytes '$request $status $body_bytes_sent';\n"
                    f"  access_log {self.log} bytes;\n{temp}"
                    f"  server {{ listen {address}:{self.port}; root {os.path.abspath(directory)}; }}\n}}\n")
        self.process = subprocess.Popen([binary, "-p", self.root, "-c", os.path.join(self.root, "nginx.conf"), "-g", "daemon off;"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(500):
            try:
                socket.create_connection((address, self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"nginx did not start on {address}:{self.port}")

    def bytes_sent(self):
        """(requests, body bytes) logged so far."""
        if not os.path.exists(self.log):
            return 0, 0
        with open(self.log) as f:
            sizes = [int(line.split(" ")[4]) for line in f if line.strip()]
        return len(sizes), sum(sizes)

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


class DelayProxy:
    """A TCP proxy in a process of its own between the clients and nginx,
    giving every connection an `rtt_ms` round trip: the connection costs
    one round trip before the first request goes on (TCP's handshake), each
    chunk of bytes is delivered half a round trip after it arrived, in each
    direction, and at most `window` bytes per direction are in flight (a
    chunk leaves the window half a round trip after the receiver took it,
    when its acknowledgement would be back), so one connection moves at
    most window / RTT, and a receiver that stops reading stops the sender,
    as TCP does. (This kernel has no netem qdisc, the usual
    way.) Its CPU is not counted in either tool's time; it moves the bytes
    each tool asks for."""

    def __init__(self, target_port, rtt_ms, window=4 << 20):
        self.log = tempfile.mktemp(prefix="fasthts-bench-proxy-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "proxy", str(self.port), str(target_port),
                                         str(rtt_ms), str(window), self.log])
        for _ in range(500):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError("the delaying proxy did not start")

    def bytes_sent(self):
        """(connections, bytes delivered to the clients) so far: what a
        client took in, where nginx's log counts what it wrote into its
        socket buffers (megabytes more for a client that closes a
        connection early, as htslib's does on every seek)."""
        if not os.path.exists(self.log):
            return 0, 0
        with open(self.log) as f:
            sizes = [int(line) for line in f if line.strip()]
        return len(sizes), sum(sizes)

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if os.path.exists(self.log):
            os.remove(self.log)


def serve_proxy(port, target_port, rtt_ms, window, log):
    import asyncio
    rtt = rtt_ms / 1000

    async def pipe(reader, writer, ready_at, source, count=None):
        loop = asyncio.get_running_loop()
        queue = asyncio.Queue()
        in_flight = [0]
        opened = asyncio.Event()
        opened.set()

        def acknowledged(n):
            in_flight[0] -= n
            if in_flight[0] < window:
                opened.set()

        gone = [False]

        async def deliver():
            try:
                while True:
                    at, chunk = await queue.get()
                    if chunk is None:
                        break
                    delay = at - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    writer.write(chunk)
                    if count is not None:
                        count[0] += len(chunk)
                    await writer.drain()
                    # Acknowledged half a round trip after the receiver took it.
                    loop.call_at(loop.time() + rtt / 2, acknowledged, len(chunk))
                writer.close()
            except ConnectionError:
                # The receiver went away: read no more from the sender (as a
                # closed TCP connection would stop it), let it see the close.
                gone[0] = True
                opened.set()

        sender = asyncio.ensure_future(deliver())
        try:
            while not gone[0]:
                await opened.wait()
                if gone[0]:
                    break
                chunk = await reader.read(256 << 10)
                if not chunk:
                    break
                now = loop.time()
                queue.put_nowait((max(now, ready_at) + rtt / 2, chunk))
                in_flight[0] += len(chunk)
                if in_flight[0] >= window:
                    opened.clear()
        except ConnectionError:
            pass
        queue.put_nowait((0, None))
        await sender
        if gone[0]:
            source.abort()

    async def handle(client_reader, client_writer):
        ready_at = asyncio.get_running_loop().time() + rtt  # the handshake
        delivered = [0]
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, upstream_writer, ready_at, client_writer.transport),
                             pipe(upstream_reader, client_writer, ready_at, upstream_writer.transport, delivered))
        with open(log, "a") as f:
            f.write(f"{delivered[0]}\n")

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def random_regions(bam, output, count=20, width=20_000, seed=38):
    """`count` random `width`-base regions on references with reads (seeded)."""
    rng = random.Random(seed)
    refs = []
    for line in output(["samtools", "idxstats", bam]).decode().splitlines():
        name, length, mapped = line.split("\t")[:3]
        if name != "*" and int(mapped) > 0 and int(length) > width:
            refs.append((name, int(length)))
    regions = []
    for _ in range(count):
        name, length = rng.choice(refs)
        start = rng.randrange(1, length - width)
        regions.append(f"{name}:{start}-{start + width - 1}")
    return regions


def remote_jobs(a, fasthts, bam, tmp, report, lines, output, timed):
    t = str(a.threads)
    server = Nginx(os.path.dirname(os.path.abspath(bam)))
    proxy = DelayProxy(server.port, a.rtt_ms) if a.rtt_ms else None
    base = f"http://127.0.0.1:{proxy.port}" if proxy else server.base
    url = f"{base}/{os.path.basename(bam)}"
    # samtools keeps a remote index it fetched in its working directory
    # (htslib's HTS_IDX_SAVE_REMOTE): each run starts from an empty one, so
    # both tools fetch the index every time.
    cwd = os.path.join(tmp, "remote-cwd")
    os.makedirs(cwd, exist_ok=True)

    def clean():
        for name in os.listdir(cwd):
            os.remove(os.path.join(cwd, name))

    def run(cmd):
        clean()
        return subprocess.run(cmd, check=True, capture_output=True, cwd=cwd).stdout

    counter = proxy or server
    unit = "connections" if proxy else "requests"

    def fetched(cmd):
        before = counter.bytes_sent()
        out = run(cmd)
        time.sleep(0.2)  # the proxy logs a connection once both ends closed
        after = counter.bytes_sent()
        return out, after[0] - before[0], after[1] - before[1]

    size = os.path.getsize(bam) + os.path.getsize(bam + ".bai")
    rtt = f" rtt {a.rtt_ms} ms" if a.rtt_ms else ""
    regions = random_regions(bam, output)
    try:
        for job, args in [(f"url flagstat{rtt}", ["flagstat", "-@", t, url]),
                          (f"url 20 regions{rtt}", ["view", "-c", "-@", t, url, *regions])]:
            tools = {"fasthts": [fasthts, *args], "samtools": ["samtools", *args]}
            local = output([fasthts, *[bam if x == url else x for x in args]])
            counted = {}
            for k, cmd in tools.items():
                out, requests, sent = fetched(cmd)
                assert out == local, f"{k} {job}: the URL's output differs from the local file's"
                counted[k] = (requests, sent)
            for k, (requests, sent) in counted.items():
                line = f"{job:10s} {k:10s} fetched {sent:,} bytes in {requests} {unit} ({sent / size:.3f} of BAM+BAI)"
                print(line, flush=True)
                lines.append(line)
            runs = {k: [] for k in tools}
            for _ in range(a.runs):
                for k, cmd in tools.items():
                    clean()
                    runs[k].append(timed(cmd, cwd=cwd))
            base = report(job, "fasthts", runs["fasthts"])
            report(job, "samtools", runs["samtools"], base)
    finally:
        if proxy:
            proxy.stop()
        server.stop()


if __name__ == "__main__" and sys.argv[1:2] == ["proxy"]:
    serve_proxy(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
