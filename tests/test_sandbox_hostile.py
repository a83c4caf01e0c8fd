"""Hostile kernels, built and traced the way the Playground does it (engine/playground.py, in the
bubblewrap sandbox of engine/sandbox): each is answered with one line, reads nothing it should not,
leaves nothing behind, and an honest kernel traced after it still works.

A traced kernel's code runs on the host in CPU mode (cuda/cpu_shim.h), so everything a C++ program
can do is fair game here: files, sockets, processes, raw system calls, the compiler itself."""
import os
import signal
import socket
import subprocess
import time

import pytest

from engine import playground, sandbox
from engine.errors import EngineError
from engine.sandbox import Limits

# Without bubblewrap these skip on a developer's machine; CI installs it and sets
# MATMUL_EXPLORER_REQUIRE_SANDBOX=1, so there they run (or fail), never skip.
pytestmark = pytest.mark.skipif(sandbox.unavailable() is not None and not os.environ.get("MATMUL_EXPLORER_REQUIRE_SANDBOX"),
                                reason=str(sandbox.unavailable()))

SECRET = "the-server-secret-7f3a"
BLANK = playground.starter_source(playground.BLANK)
BODY = "    int row = blockIdx.y * BY + threadIdx.y;"


@pytest.fixture(autouse=True)
def small_limits(monkeypatch, tmp_path):
    """Small limits, so a kernel that runs away is stopped in a second or two; a cache of its own;
    and a secret in the server's environment, which no kernel may see."""
    monkeypatch.setattr(sandbox, "LIMITS", Limits(cpu_s=2, wall_s=15, memory_bytes=4 << 30, processes=32,
                                                  file_bytes=8 << 20, tmp_bytes=64 << 20, idle_s=3))
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    monkeypatch.setenv("SERVER_SECRET", SECRET)


def kernel(statement: str = "", top: str = "") -> str:
    """The blank kernel with `top` at file scope and `statement` run first by every thread."""
    text = BLANK.replace('#include "trace.cuh"', f'#include "trace.cuh"\n{top}')
    return text.replace(BODY, f"{statement}\n{BODY}") if statement else text


def build_and_trace(text: str, size: int = 16):
    saved = playground.save(text)
    assert not saved.problems, saved.problems
    spec = playground.spec_of(saved)
    return playground.trace(saved, spec, playground.problem_for(spec, size, size, size, {}), [(0, 0)])


def refused(text: str) -> str:
    """The message a kernel is refused with: its first line says what happened (a compiler's
    further lines may follow), and nothing of the host's is in any of it."""
    with pytest.raises(EngineError) as exc:
        build_and_trace(text)
    message = str(exc.value)
    assert SECRET not in message and "root:x:0:0" not in message, message
    first = message.splitlines()[0]
    assert 10 < len(first) < 600, message
    return message


def honest_still_works():
    t = build_and_trace(BLANK)
    assert len(t) > 0 and t.rel_error < 1e-4


def sandbox_processes() -> list[str]:
    """Processes of the sandboxes' user ids (the pool engine/sandbox hands out) still alive (a zombie
    is not: it has ended and waits for the system to reap it)."""
    out = subprocess.run(["ps", "-eo", "uid=,stat=,pid=,comm="], capture_output=True, text=True).stdout.split("\n")
    return [line for line in out if line.split() and int(line.split()[0]) >= 200_000 and not line.split()[1].startswith("Z")]


# ---------------------------------------------------------------- the compiler reads what it is told

@pytest.mark.parametrize("include", ['"/etc/passwd"', "</etc/shadow>", "</dev/random>", "</dev/zero>",
                                     '"../../../../../../root/.bashrc"', '"/work/main/README.md"'])
def test_an_include_of_a_host_file_finds_nothing(include):
    started = time.perf_counter()
    message = refused(kernel(top=f"#include {include}"))
    assert "No such file" in message or "error" in message, message
    assert time.perf_counter() - started < 10   # /dev/random is not there to hang on


def test_a_preprocessor_bomb_is_stopped():
    levels = "\n".join(f"#define X{i} X{i + 1} X{i + 1}" for i in range(40))
    message = refused(kernel(top=f"{levels}\n#define X40 1\nstatic int bomb[] = {{X0}};"))
    assert "CPU time" in message or "time limit" in message or "memory" in message or "error" in message, message


def test_a_template_recursion_bomb_is_a_compile_error():
    top = ("template <int N> struct Fib { static const long v = Fib<N - 1>::v + Fib<N - 2>::v; };\n"
           "template <> struct Fib<0> { static const long v = 0; };\n"
           "template <> struct Fib<1> { static const long v = 1; };\n"
           "static const long fib = Fib<100000>::v;")
    message = refused(kernel(top=top))
    assert "template" in message or "CPU time" in message, message


# ---------------------------------------------------------------- the kernel's code, run on the host

def test_reading_files_by_fopen_finds_nothing(tmp_path):
    other = playground.save(BLANK.replace("one thread per element", SECRET))   # another student's kernel
    top = "#include <cstdio>\n#include <cstdlib>"
    paths = ["/etc/passwd", str(other.path), str(tmp_path / "secret.txt")]
    (tmp_path / "secret.txt").write_text(SECRET)
    reads = " ".join(f'{{ FILE *f = fopen("{p}", "r"); char b[256] = {{0}}; if (f) {{ fread(b, 1, 255, f); '
                     f'printf("%s\\n", b); fflush(stdout); abort(); }} }}' for p in paths)
    t = build_and_trace(kernel(statement=f"    if (threadIdx.x == 0 && threadIdx.y == 0) {{ {reads} }}", top=top))
    assert len(t) > 0    # every fopen failed, so nothing was printed and the kernel ran to its end


def test_the_servers_environment_is_not_visible():
    """Neither in its own environment nor in that of bwrap's processes, which it can read in /proc
    (bwrap kept the server's whole environment there, before the sandbox started it with none)."""
    top = "#include <cstdio>\n#include <cstdlib>\n#include <cstring>"
    statement = ('    if (threadIdx.x == 0 && getenv("SERVER_SECRET")) abort();\n'
                 '    for (int pid = 1; threadIdx.x == 0 && pid < 64; pid++) { char path[64], b[8192] = {0};\n'
                 '        snprintf(path, sizeof path, "/proc/%d/environ", pid); FILE *f = fopen(path, "r");\n'
                 '        if (!f) continue; size_t n = fread(b, 1, sizeof b - 1, f); fclose(f);\n'
                 '        for (size_t i = 0; i + 13 < n; i++) if (!memcmp(b + i, "SERVER_SECRET", 13)) abort(); }')
    assert len(build_and_trace(kernel(statement=statement, top=top))) > 0


def test_writing_outside_its_own_tmp_fails(tmp_path):
    top = "#include <cstdio>\n#include <cstdlib>"
    targets = [str(tmp_path / "written.txt"), str(playground.root() / "written.txt"),
               str(sandbox.ROOT / "engine" / "written.py")]
    # Where a folder of the path is inside the sandbox (its own tmpfs holds the folders bwrap made for
    # its binds), the write lands there and vanishes with it; the host's files are untouched.
    writes = " ".join(f'{{ FILE *f = fopen("{p}", "w"); if (f) {{ fputs("x", f); fclose(f); }} }}' for p in targets)
    build_and_trace(kernel(statement=f"    if (threadIdx.x == 0) {{ {writes} }}", top=top))
    assert not [p for p in targets if os.path.exists(p)]


def test_a_socket_reaches_nothing():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    top = "#include <sys/socket.h>\n#include <netinet/in.h>\n#include <arpa/inet.h>\n#include <unistd.h>\n#include <cstdlib>"
    statement = ("    if (threadIdx.x == 0) { int s = socket(AF_INET, SOCK_STREAM, 0); sockaddr_in a = {}; a.sin_family = AF_INET;"
                 f" a.sin_port = htons({port}); a.sin_addr.s_addr = htonl(0x7f000001);"
                 " if (s >= 0 && connect(s, (sockaddr *)&a, sizeof a) == 0) abort(); }")
    try:
        assert len(build_and_trace(kernel(statement=statement, top=top))) > 0
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()


def test_a_fork_bomb_is_held_and_leaves_nothing():
    top = "#include <unistd.h>"
    message = refused(kernel(statement="    if (threadIdx.x == 0) { while (1) fork(); }", top=top))
    assert "CPU time" in message or "time limit" in message or "killed" in message, message
    time.sleep(0.5)
    assert sandbox_processes() == []
    honest_still_works()


def test_an_infinite_loop_runs_out_of_cpu_time():
    message = refused(kernel(statement="    volatile int spin = 1; while (spin) {}"))
    assert "CPU time" in message or "time limit" in message, message


@pytest.mark.parametrize("statement", ["    if (threadIdx.x == 0) sleep(100);",
                                       "    for (;;) usleep(20000);"])
def test_a_kernel_that_sleeps_is_stopped_long_before_the_time_limit(statement):
    """A sleep uses no CPU time: it had run to the sandbox's wall-clock limit (45 s), holding its place
    in the server's line of heavy work all that time."""
    started = time.perf_counter()
    message = refused(kernel(statement=statement, top="#include <unistd.h>"))
    assert "computed nothing for 3 s" in message, message
    # The build before it (a compiler, busy throughout) is not taken for idle; the sleep is stopped at 3 s.
    assert time.perf_counter() - started < 12
    assert sandbox_processes() == []


def test_an_infinite_loop_before_main_is_stopped_too():
    message = refused(kernel(top="static int never = [] { volatile int spin = 1; while (spin) {} return 0; }();"))
    assert "CPU time" in message or "time limit" in message, message


def test_a_memory_bomb_is_refused():
    top = "#include <cstdlib>\n#include <cstring>"
    statement = ("    if (threadIdx.x == 0) { for (;;) { char *p = (char *)malloc(1 << 26); if (!p) abort(); "
                 "memset(p, 1, 1 << 26); } }")
    message = refused(kernel(statement=statement, top=top))
    assert "crashed" in message or "CPU time" in message or "memory" in message, message


def test_huge_output_is_cut_and_stopped():
    top = "#include <cstdio>"
    message = refused(kernel(statement='    for (;;) printf("%s\\n", "spam spam spam spam spam spam spam spam");', top=top))
    assert len(message) < 600 and ("CPU time" in message or "time limit" in message), message


def test_a_huge_file_in_its_own_tmp_is_stopped():
    top = "#include <cstdio>"
    statement = ('    if (threadIdx.x == 0) { FILE *f = fopen("/tmp/big", "w"); static char b[1 << 20]; '
                 "for (;;) fwrite(b, 1, sizeof b, f); }")
    message = refused(kernel(statement=statement, top=top))
    assert "file over" in message or "CPU time" in message, message


def test_system_and_exec_find_no_shell_to_read_with():
    top = "#include <cstdlib>\n#include <cstdio>"
    statement = ('    if (threadIdx.x == 0) { FILE *p = popen("cat /etc/passwd /root/.bashrc 2>&1", "r"); char b[512] = {0};'
                 ' if (p) { fread(b, 1, 511, p); pclose(p); } if (b[0] && b[0] != 99) { printf("%s", b); abort(); } }')
    # cat runs (it is in /usr) and finds neither file: "cat: ..." starts with 'c' (99)
    assert len(build_and_trace(kernel(statement=statement, top=top))) > 0


def test_raw_system_calls_reach_only_the_sandbox():
    """kill(-1, SIGKILL) by inline assembly: every process it may signal, which in its own PID
    namespace is its own. A process of the test's outlives it."""
    witness = subprocess.Popen(["sleep", "60"])
    statement = ('    if (threadIdx.x == 0) { long r; asm volatile("syscall" : "=a"(r) : "a"(62L), "D"(-1L), "S"(9L) '
                 ': "rcx", "r11", "memory"); }')
    try:
        try:   # it kills its own sandbox's processes, so it may or may not get to the end
            build_and_trace(kernel(statement=statement))
        except EngineError as exc:
            assert SECRET not in str(exc)
        assert witness.poll() is None
    finally:
        witness.kill()
        witness.wait()
    honest_still_works()


def test_ptrace_reaches_no_process_outside():
    """A process of the test's, by its number: in the sandbox's own PID namespace it is not there."""
    witness = subprocess.Popen(["sleep", "60"])
    top = "#include <sys/ptrace.h>\n#include <cstdlib>"
    statement = f"    if (threadIdx.x == 0 && ptrace(PTRACE_ATTACH, {witness.pid}, 0, 0) == 0) abort();"
    try:
        assert len(build_and_trace(kernel(statement=statement, top=top))) > 0
        assert witness.poll() is None
        assert open(f"/proc/{witness.pid}/status").read().count("TracerPid:\t0") == 1
    finally:
        witness.kill()
        witness.wait()


# ---------------------------------------------------------------- kernels that are simply wrong

def test_an_out_of_bounds_access_is_named():
    message = refused(BLANK.replace("LDG(A, row * K + k)", "LDG(A, row * K + k + 100000)"))
    assert "outside its bounds" in message, message


def test_a_misaligned_vector_access_is_named():
    text = BLANK.replace("sum += LDG(A, row * K + k) * LDG(B, k * N + col);",
                         "float4 v = LDG4(A, row * K + 1); sum += v.x * LDG(B, k * N + col);")
    message = refused(text)
    assert "not a multiple of its size" in message or "outside its bounds" in message, message


def test_a_kernel_that_never_reaches_its_barrier_is_stopped():
    """Half the block waits at the barrier; the other half spins, waiting for them, and never gets there."""
    message = refused(kernel(statement="    if (threadIdx.x < 16) SYNC(); else { volatile int spin = 1; while (spin) {} }"))
    assert "CPU time" in message or "forever" in message, message


def test_a_kernel_that_breaks_a_tracing_rule_gets_the_line_and_the_fix():
    saved = playground.save(BLANK.replace("LDG(B, k * N + col)", "B[k * N + col]"))
    line = next(i for i, t in enumerate(saved.text.splitlines(), 1) if "B[k * N + col]" in t)
    assert [p.line for p in saved.problems] == [line]
    assert "use LDG/STG" in saved.problems[0].message


def test_a_compile_error_comes_back_at_its_line():
    text = BLANK.replace("float sum = 0.0f;", "float sum = 0.0f\n        int x = 1;")
    message = refused(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "int x = 1;" in t)
    assert [d.line for d in playground.diagnostics(message)][:1] == [line], message


def test_a_compile_error_inside_the_engines_headers_names_no_server_path():
    """An error g++ reports in cuda/trace.cuh (an access macro given what it cannot store) had shown
    the header's path on the server, and no line of the student's: it is now said at the line that
    reached it, the header named."""
    from engine.kernels import sources
    text = kernel().replace("STG(C, row * N + col, sum);", 'STG(C, row * N + col, "a string");')
    line = 1 + text.splitlines().index(next(t for t in text.splitlines() if '"a string"' in t))
    message = refused(text)
    assert str(sources.CUDA_DIR) not in message, message
    assert [(d.line, "(in trace.cuh:" in d.message) for d in playground.diagnostics(message)] == [(line, True)], message


def test_a_huge_source_is_refused_before_anything_reads_it():
    with pytest.raises(EngineError, match="up to 64 KB"):
        playground.save(BLANK + "//" + "x" * (100 << 20))


# ---------------------------------------------------------------- the sandbox itself

def test_inside_there_is_no_host_to_see():
    done = sandbox.run_sandboxed(["/bin/sh", "-c", "ls / /work /root /etc /home 2>&1; id -u; cat /proc/1/cmdline; "
                                  "echo $SERVER_SECRET"])
    assert done.ok, done.reason
    assert "No such file" in done.output and SECRET not in done.output
    uid = int(next(line for line in done.output.splitlines() if line.strip().isdigit()))
    assert uid >= 200_000    # not root, and not the server's user


def test_stop_ends_a_running_sandbox_at_once():
    import threading
    results = []
    t = threading.Thread(target=lambda: results.append(sandbox.run_sandboxed(["/bin/sleep", "30"])))
    started = time.perf_counter()
    t.start()
    time.sleep(1.0)
    sandbox.stop()
    try:
        t.join(timeout=5)
        assert not t.is_alive() and time.perf_counter() - started < 4
        assert not results[0].ok
        with pytest.raises(EngineError, match="stopping"):
            sandbox.run_sandboxed(["/bin/true"])
    finally:
        sandbox._STOPPED.clear()
    assert sandbox_processes() == []


def test_the_playground_is_off_unless_switched_on(monkeypatch):
    monkeypatch.delenv(sandbox.SWITCH_ENV, raising=False)
    monkeypatch.setattr("sys.argv", ["app.py"])
    on, why = sandbox.status()
    assert not on and "--playground" in why
    monkeypatch.setattr("sys.argv", ["app.py", "--playground"])
    assert sandbox.status()[0]
    monkeypatch.setattr("sys.argv", ["app.py"])
    monkeypatch.setenv(sandbox.SWITCH_ENV, "1")
    assert sandbox.status()[0]


def test_an_honest_kernel_after_all_of_them():
    honest_still_works()
    assert sandbox_processes() == []
    assert signal.SIGKILL   # (the module's kills never reached the test process)


def test_a_result_over_the_limit_reads_as_a_sentence():
    """The page says "your kernel " and the reason: "your kernel its result is over 256 MiB" before."""
    from engine import sandbox as box
    reason = box._reason(0, False, True, box.Limits(), "")
    assert f"your kernel {reason}" == ("your kernel made a result over 256 MiB, the most the sandbox hands back: "
                                       "try a smaller size")
