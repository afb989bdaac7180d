// Command wc-sqlite reads the tables of an SQLite database for wc-new,
// which runs it to import the sessions other agents keep in SQLite
// (opencode, goose, llm, whycodes). It alone links an SQLite library: the
// other commands start as fast as before. It opens the database read-only
// and prints JSON lines:
//
//	wc-sqlite tables DB         {"table":NAME,"columns":[NAME…]} per table
//	wc-sqlite rows DB TABLE…    {"table":NAME,"row":{COLUMN:VALUE…}} per row
//
// Text is a JSON string, a number a JSON number, NULL null, and a blob
// that is not UTF-8 {"base64":…}. Rows come in rowid order. Errors are one
// line on stderr and status 1; a usage error gives status 2, a file that is
// not an SQLite database 65. man/wc-sqlite.1 is written by hand.
package main

import (
	"bufio"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	_ "modernc.org/sqlite"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "wc-sqlite:", err)
		var bad *notDatabase
		switch {
		case errors.As(err, &bad):
			os.Exit(65)
		case errors.Is(err, errUsage):
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage: wc-sqlite tables DB | wc-sqlite rows DB TABLE...")

type notDatabase struct{ path string }

func (e *notDatabase) Error() string { return e.path + " is not an SQLite database" }

func run(args []string) error {
	if len(args) < 2 || (args[0] != "tables" && args[0] != "rows") {
		return errUsage
	}
	db, err := open(args[1])
	if err != nil {
		return err
	}
	defer db.Close()
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	if args[0] == "tables" {
		err = tables(db, out)
	} else {
		for _, t := range args[2:] {
			if err = rows(db, t, out); err != nil {
				break
			}
		}
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}

// open opens path read-only: a database another program has open (in
// WAL mode too) is read as it stands, never changed.
func open(path string) (*sql.DB, error) {
	head := make([]byte, 16)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	n, _ := f.Read(head)
	f.Close()
	if string(head[:n]) != "SQLite format 3\x00" {
		return nil, &notDatabase{path}
	}
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite", "file:"+esc+"?mode=ro")
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec("PRAGMA query_only = 1"); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func tables(db *sql.DB, out *bufio.Writer) error {
	names, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		return err
	}
	var list []string
	for names.Next() {
		var n string
		if err := names.Scan(&n); err != nil {
			names.Close()
			return err
		}
		list = append(list, n)
	}
	names.Close()
	if err := names.Err(); err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for _, n := range list {
		cols, err := db.Query(`SELECT name FROM pragma_table_info(?)`, n)
		if err != nil {
			return err
		}
		line := struct {
			Table   string   `json:"table"`
			Columns []string `json:"columns"`
		}{Table: n, Columns: []string{}}
		for cols.Next() {
			var c string
			if err := cols.Scan(&c); err != nil {
				cols.Close()
				return err
			}
			line.Columns = append(line.Columns, c)
		}
		cols.Close()
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

func rows(db *sql.DB, table string, out *bufio.Writer) error {
	quoted := `"` + strings.ReplaceAll(table, `"`, `""`) + `"`
	r, err := db.Query("SELECT * FROM " + quoted + " ORDER BY rowid")
	if err != nil {
		// A table without rowid comes in its own order.
		if r, err = db.Query("SELECT * FROM " + quoted); err != nil {
			return err
		}
	}
	defer r.Close()
	cols, err := r.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	tableJSON, _ := json.Marshal(table)
	for r.Next() {
		if err := r.Scan(ptrs...); err != nil {
			return err
		}
		row := make(map[string]any, len(cols))
		for i, c := range cols {
			row[c] = value(vals[i])
		}
		b, err := marshal(row)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, `{"table":%s,"row":%s}`+"\n", tableJSON, b)
	}
	return r.Err()
}

func value(v any) any {
	switch x := v.(type) {
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return map[string]string{"base64": base64.StdEncoding.EncodeToString(x)}
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return v
}

func marshal(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}
