package main

import (
	"bytes"
	"io"
	"os"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session/format"
)

// readSQLite imports the sessions of another agent's SQLite database,
// which wc-sqlite reads: it lists the tables, the format package names the
// application, and wc-sqlite prints the rows of the tables it needs.
func readSQLite(c *command.Ctx, kind format.Kind, path string) ([]format.Imported, error) {
	listing, err := c.RunSQLite("tables", path)
	if err != nil {
		return nil, err
	}
	tables := map[string][]string{}
	for _, line := range bytes.Split(listing, []byte("\n")) {
		if v := gjson.ParseBytes(line); v.Get("table").Exists() {
			var cols []string
			for _, col := range v.Get("columns").Array() {
				cols = append(cols, col.Str)
			}
			tables[v.Get("table").Str] = cols
		}
	}
	app, want, err := format.SQLiteApp(tables)
	if err != nil {
		return nil, &badFile{path, err.Error()}
	}
	if !sameApp(kind, app) {
		return nil, &badFile{path, "a database of " + string(app) + ", not " + string(kind)}
	}
	rows, err := c.RunSQLite(append([]string{"rows", path}, want...)...)
	if err != nil {
		return nil, err
	}
	imported, err := format.ImportSQLite(app, rows, c.StringSlice("select"))
	if err != nil {
		return nil, &badFile{path, err.Error()}
	}
	return checkImports(path, imported)
}

// sameApp reports whether --import allows a database of app: auto does,
// and a share's format (native, which "whycodes" names) stands for
// whycodes' database.
func sameApp(kind, app format.Kind) bool {
	return kind == format.KindAuto || kind == app || kind == format.KindNative && app == format.KindWhycodes
}

// isSQLiteFile reports a file that starts as SQLite databases do.
func isSQLiteFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(format.SQLiteMagic))
	_, err = io.ReadFull(f, head)
	return err == nil && string(head) == format.SQLiteMagic
}
