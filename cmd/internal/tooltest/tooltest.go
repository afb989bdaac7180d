package tooltest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
)

var update = flag.Bool("update", false, "rewrite man pages and golden files")

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// ModuleRoot is the directory holding go.mod.
func ModuleRoot(t testing.TB) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// Binaries builds every wc command (and wcbench) into a temporary
// directory, once per test process, and returns that directory.
func Binaries(t testing.TB) string {
	t.Helper()
	root := ModuleRoot(t)
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "wc-bin-")
		if buildErr != nil {
			return
		}
		// wcbench too: the benchmark scripts are tested at a small size.
		cmd := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", binDir+string(filepath.Separator), "./cmd/...", "./internal/bench/wcbench")
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			buildErr = &buildError{err: err, out: stderr.String()}
		}
	})
	if buildErr != nil {
		t.Fatalf("building the wc commands: %v", buildErr)
	}
	return binDir
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// Fixtures is the repository's directory of transcript fixtures.
func Fixtures(t testing.TB) string {
	dir := filepath.Join(ModuleRoot(t), "testdata", "fixtures")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("fixtures: %v", err)
	}
	return dir
}

// RunScripts runs every .txtar script in dir with the wc commands on PATH,
// a fresh store in $WC_STORE and a HOME of its own, each command opening
// the store itself (WC_DIRECT=1).
func RunScripts(t *testing.T, dir string) { runScripts(t, dir, false) }

// RunScriptsResident runs the scripts again as commands run by default:
// through a resident store process. Lines that hold for one mode only are
// marked [resident] or [!resident].
func RunScriptsResident(t *testing.T, dir string) { runScripts(t, dir, true) }

func runScripts(t *testing.T, dir string, resident bool) {
	bin := Binaries(t)
	root := ModuleRoot(t)
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		UpdateScripts:       *update,
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"exits": exits},
		Condition: func(cond string) (bool, error) {
			if cond == "resident" {
				return resident, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("WC_STORE", filepath.Join(env.WorkDir, "store"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("XDG_DATA_HOME", "")
			env.Setenv("WC_DIRECT", "1")
			env.Setenv("WC_RESIDENT", "")
			if resident {
				env.Setenv("WC_DIRECT", "")
			}
			// Scripts that build (install.sh) use the test's Go caches,
			// not ones under the script's own HOME.
			for name, v := range goEnv(env.T()) {
				env.Setenv(name, v)
			}
			env.Setenv("FIXTURES", filepath.Join(root, "testdata", "fixtures"))
			env.Setenv("SCRIPTS", filepath.Join(root, "scripts"))
			env.Defer(func() { StopResidents(env.T(), env.WorkDir) })
			return nil
		},
	})
}

var goEnvOnce = sync.OnceValues(func() (map[string]string, error) {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		return nil, err
	}
	v := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(v) != 3 {
		return nil, fmt.Errorf("go env printed %q", out)
	}
	return map[string]string{"GOCACHE": v[0], "GOMODCACHE": v[1], "GOPATH": v[2]}, nil
})

// goEnv is where this go keeps its build and module caches.
func goEnv(t testscript.T) map[string]string {
	env, err := goEnvOnce()
	if err != nil {
		t.Fatal("go env: " + err.Error())
	}
	return env
}

// CheckManPage fails when man/<name>.1 differs from what spec generates;
// with -update it rewrites the page.
func CheckManPage(t *testing.T, spec *command.Spec) {
	t.Helper()
	path := filepath.Join(ModuleRoot(t), "man", spec.Name+".1")
	want := spec.ManPage()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/%s -update)", err, spec.Name)
	}
	if string(got) != want {
		t.Errorf("man/%s.1 is stale: run go test ./cmd/%s -update", spec.Name, spec.Name)
	}
}

// exits runs a command and checks its exact exit status:
// "exits 65 wc-append 3f2a" (testscript's exec only tells zero from not).
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE COMMAND [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %q is not a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// ImportArgs writes n copies of share, a whycodes share, and returns the
// arguments that have one wc-new import them, n sessions at once.
func ImportArgs(t testing.TB, n int, share []byte) []string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"--import", "native"}
	for i := range n {
		f := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		if err := os.WriteFile(f, share, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, f)
	}
	return args
}

// StoreEnv is the environment for running wc commands against the store in
// dir; the resident store process they may start is stopped before the
// test's temporary directories are removed.
func StoreEnv(t testing.TB, dir string) []string {
	t.Cleanup(func() { StopResidents(t, filepath.Dir(dir)) })
	return append(os.Environ(), "WC_STORE="+dir)
}

// residentGrace bounds how long Main waits for resident store processes to
// stop by themselves after the tests: they idle out after 2 seconds, and at
// once when their store directory is removed.
const residentGrace = 10 * time.Second

// Main runs a package's tests (call it from TestMain), then waits for every
// resident store process started from the binaries built for them to stop,
// and removes the binaries. One still running after residentGrace would
// outlive the tests: it is killed, and the run fails.
func Main(m *testing.M) int {
	code := m.Run()
	if binDir == "" {
		return code
	}
	deadline := time.Now().Add(residentGrace)
	left := processesRunning(binDir)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		left = processesRunning(binDir)
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "tooltest: %d resident store processes (pids %v) outlived the tests by %v; killed\n", len(left), left, residentGrace)
		if code == 0 {
			code = 1
		}
	}
	_ = os.RemoveAll(binDir)
	return code
}

// processesRunning lists the live processes (zombies excluded: they hold
// nothing) whose program is in dir.
func processesRunning(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || !strings.HasPrefix(exe, dir+string(filepath.Separator)) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// StopResidents stops every resident store process of a store under root
// and waits until each has closed its store.
func StopResidents(t interface{ Log(...any) }, root string) {
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "wcd.sock" {
			if _, err := remote.Shutdown(filepath.Dir(path), 30*time.Second); err != nil {
				t.Log("stopping the resident store process of", filepath.Dir(path), ":", err)
			}
		}
		return nil
	})
}
