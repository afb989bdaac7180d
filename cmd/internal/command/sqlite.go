package command

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// sqliteProgramEnv names the wc-sqlite to run, as WC_STORE_PROGRAM does
// wc-store.
const sqliteProgramEnv = "WC_SQLITE_PROGRAM"

// helperProgram finds a wc program the command runs: where env says, else
// beside this command, else on PATH.
func helperProgram(name, env, what string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", &Error{Code: ExitFailure, Msg: "cannot find " + name + ", which " + what,
		Hints: []string{"install it beside this command or on PATH (go install ./cmd/...), or set " + env}}
}

// RunSQLite runs wc-sqlite, the program that reads SQLite databases (so
// that no other command links an SQLite library), and returns what it
// printed. A database it cannot read is invalid input data.
func (c *Ctx) RunSQLite(args ...string) ([]byte, error) {
	program, err := helperProgram("wc-sqlite", sqliteProgramEnv, "reads SQLite databases")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(program, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(stderr.String()), "wc-sqlite: "))
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.Bytes(), nil
	case errors.As(err, &exit) && exit.ExitCode() == ExitDataErr:
		return nil, DataErrf("%s", msg)
	case errors.As(err, &exit) && msg != "":
		return nil, &Error{Code: ExitFailure, Msg: msg}
	}
	return nil, &Error{Code: ExitFailure, Msg: "cannot run " + program + ": " + err.Error()}
}
