package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/format"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

func newSession(c *command.Ctx) error {
	if c.Bool("restore") {
		return restore(c)
	}
	if c.Bool("new-ids") {
		return command.Usagef("--new-ids goes with --restore")
	}
	system, err := c.TextArg("system")
	if err != nil {
		return err
	}
	if c.IsSet("title") && session.SanitizeTitle(c.String("title")) == "" {
		return command.Usagef("--title is empty")
	}
	if c.Bool("update") && c.Bool("again") {
		return command.Usagef("--update and --again exclude each other")
	}
	importing := c.IsSet("import") || c.Args().Len() > 0
	if !importing {
		// Data on stdin is what the user meant to import.
		data, err := c.Stdin()
		if err != nil {
			return err
		}
		importing = len(bytes.TrimSpace(data)) > 0
	}
	if !importing {
		for _, f := range []string{"sidechains", "update", "again"} {
			if c.Bool(f) {
				return command.Usagef("--%s goes with an import", f)
			}
		}
		project, err := c.ProjectDir()
		if err != nil {
			return err
		}
		meta := session.New(command.NewID(), project, system, c.Now)
		meta.SetTitleManual(c.String("title"))
		return commit(c, []importedSession{{meta: meta}}, nil)
	}
	sessions, skipped, err := readImports(c, system)
	if err != nil {
		return err
	}
	return commit(c, sessions, skipped)
}

type importedSession struct {
	meta    session.Meta
	nodes   []session.Node
	share   *session.Share // the import, for --update
	skipped map[string]int
	source  session.ImportSource
}

// skippedFile is the line of a file of a directory that was not imported.
type skippedFile struct {
	File   string `json:"file"`
	Reason string `json:"skipped_file"`
}

// readImports reads and converts every file before the store is touched.
// A directory stands for every file below it: those that are not a
// transcript wc reads are reported, the others imported.
func readImports(c *command.Ctx, system string) ([]importedSession, []skippedFile, error) {
	kind, err := format.ParseKind(c.String("import"))
	if err != nil {
		return nil, nil, command.Usagef("unknown import format %q", c.String("import")).WithHint("formats: auto, %s", kindList())
	}
	args := c.Args().Slice()
	if len(args) == 0 {
		args = []string{"-"}
	}
	var inputs []input
	for _, a := range args {
		if a == "-" {
			inputs = append(inputs, input{path: a})
			continue
		}
		if st, err := os.Stat(a); err == nil && st.IsDir() {
			in, err := treeInputs(a)
			if err != nil {
				return nil, nil, &command.Error{Code: command.ExitFailure, Msg: "cannot read " + a + ": " + err.Error()}
			}
			inputs = append(inputs, in...)
			continue
		}
		inputs = append(inputs, input{path: a})
	}
	var out []importedSession
	var skipped []skippedFile
	progress := c.Progress("wc-new: reading", len(inputs))
	for n, in := range inputs {
		progress(n)
		var imported []format.Imported
		if in.opencodeRoot != "" {
			imported, err = readOpencodeSession(c, in.opencodeRoot, in.path)
		} else {
			imported, err = readOne(c, kind, in.path)
		}
		var bad *badFile
		switch {
		case errors.As(err, &bad) && in.inTree:
			reason := bad.msg
			switch reason {
			case "empty":
				reason = "the file is empty"
			case "backup":
				reason = "a backup, not a transcript (restore it with wc-new --restore)"
			}
			skipped = append(skipped, skippedFile{File: in.path, Reason: reason})
			continue
		case bad != nil && bad.msg == "backup":
			return nil, nil, command.DataErrf("%s", bad.Error()).WithHint("restore it with wc-new --restore")
		case bad != nil:
			return nil, nil, command.DataErrf("%s", bad.Error())
		case err != nil:
			return nil, nil, err
		}
		abs := ""
		if in.path != "-" {
			if abs, err = filepath.Abs(in.path); err != nil {
				abs = in.path
			}
		}
		for i := range imported {
			imp := &imported[i]
			meta, nodes := session.FromShare(&imp.Share, command.NewID(), c.Now)
			if c.IsSet("project") || meta.ProjectPath == "" {
				if meta.ProjectPath, err = c.ProjectDir(); err != nil {
					return nil, nil, err
				}
			}
			if c.IsSet("system") {
				meta.SetSystemPrompt(system)
			}
			meta.SetTitleManual(c.String("title"))
			// A share stands for the source of the session it copies, if
			// that was imported; else for itself.
			src := session.ImportSource{Format: string(imp.Format), ID: imp.SourceID}
			if shared := meta.SharedSource(); imp.Format == format.KindNative && shared.Format != "" {
				src = shared
			}
			meta.RecordImport(src.Format, src.ID, abs, imp.Share.Meta.Usage)
			out = append(out, importedSession{meta: meta, nodes: nodes, share: &imp.Share, skipped: imp.Skipped, source: meta.ImportSource()})
		}
	}
	progress(len(inputs))
	return out, skipped, nil
}

// badFile is a file whose content wc cannot import.
type badFile struct{ name, msg string }

func (e *badFile) Error() string {
	switch e.msg {
	case "empty":
		return e.name + " is empty"
	case "backup":
		return e.name + " is a backup, not a transcript"
	}
	return e.name + ": " + e.msg
}

// readOne reads and imports one file ("-": stdin).
func readOne(c *command.Ctx, kind format.Kind, path string) ([]format.Imported, error) {
	name := path
	if path == "-" {
		name = "stdin"
	}
	if path != "-" && isSQLiteFile(path) {
		return readSQLite(c, kind, path)
	}
	data, err := c.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &badFile{name, "empty"}
	}
	if record.IsBackup(data) {
		return nil, &badFile{name, "backup"}
	}
	if bytes.HasPrefix(data, []byte(format.SQLiteMagic)) {
		return nil, &badFile{name, "an SQLite database is read from its file: give its path"}
	}
	imported, err := format.Import(kind, data, format.Options{Sidechains: c.Bool("sidechains")})
	if err != nil {
		return nil, &badFile{name, err.Error()}
	}
	return checkImports(name, imported)
}

// checkImports applies the message size limit to what a file imported.
func checkImports(name string, imported []format.Imported) ([]format.Imported, error) {
	for i := range imported {
		if err := checkShareSizes(&imported[i].Share); err != nil {
			return nil, &badFile{name, err.Error()}
		}
	}
	return imported, nil
}

// input is a file to import: a transcript, or the session file of an
// opencode storage tree.
type input struct {
	path         string
	inTree       bool   // found in a directory: a file wc cannot read is skipped
	opencodeRoot string // the storage tree path's session file is of
}

// treeInputs lists what a directory holds, in path order: its regular
// files, and for an opencode storage tree below it, its sessions.
func treeInputs(dir string) ([]input, error) {
	var out []input
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && isOpencodeStorage(p):
			files, err := opencodeSessions(p)
			for _, f := range files {
				out = append(out, input{path: f, inTree: true, opencodeRoot: p})
			}
			if err != nil {
				return err
			}
			return filepath.SkipDir
		case d.Type().IsRegular():
			out = append(out, input{path: p, inTree: true})
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, err
}

func kindList() string {
	var b []byte
	for i, k := range format.Kinds {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, k...)
	}
	return string(b)
}

// importLine is what wc-new prints for a session: its info, how many
// records it skipped, and, for a source imported before, that the
// session existed and what --update added.
type importLine struct {
	session.Info
	Skipped  map[string]int `json:"skipped,omitempty"`
	Existing bool           `json:"existing,omitempty"`
	Added    *int           `json:"added,omitempty"`
}

func commit(c *command.Ctx, sessions []importedSession, skipped []skippedFile) error {
	st, err := c.Open(store.Write)
	if err != nil {
		return err
	}
	var known map[string]string // source key -> session id
	if !c.Bool("again") && len(sessions) > 0 && sessions[0].share != nil {
		if known, err = knownSources(st); err != nil {
			return err
		}
	}
	for i := range sessions {
		s := &sessions[i]
		if id, ok := known[sourceKey(s.source)]; ok {
			var line importLine
			err := c.RetryChanged(func() (err error) { line, err = existing(c, st, id, s); return err })
			if err != nil {
				return err
			}
			if err := c.PrintJSON(line); err != nil {
				return err
			}
			continue
		}
		if err := st.Commit(&s.meta, s.nodes); err != nil {
			return err
		}
		if known != nil {
			known[sourceKey(s.source)] = s.meta.ID // the same source twice in one run
		}
		if err := c.PrintJSON(importLine{Info: s.meta.Info(), Skipped: s.skipped}); err != nil {
			return err
		}
	}
	for _, f := range skipped {
		if err := c.PrintJSON(f); err != nil {
			return err
		}
	}
	return nil
}

// sourceKey names a source: its format and its own session id, or, for a
// source without one, its format and file. "" names none.
func sourceKey(src session.ImportSource) string {
	switch {
	case src.Format == "":
		return ""
	case src.ID != "":
		return src.Format + "\x00id\x00" + src.ID
	case src.Path != "":
		return src.Format + "\x00path\x00" + src.Path
	}
	return ""
}

// knownSources maps the sources of the stored sessions to the most
// recently updated session of each.
func knownSources(st store.Handle) (map[string]string, error) {
	known := map[string]string{}
	err := st.ListInfo(store.ListQuery{}, func(in *session.Info) error {
		k := sourceKey(session.ImportSource{Format: in.SourceFormat, ID: in.SourceID, Path: in.SourcePath})
		if _, seen := known[k]; k != "" && !seen {
			known[k] = in.ID
		}
		return nil
	})
	return known, err
}

// existing is the line of a source imported before: the stored session,
// brought up to date with --update.
func existing(c *command.Ctx, st store.Handle, id string, s *importedSession) (importLine, error) {
	meta, err := st.Meta(id)
	if err != nil {
		return importLine{}, err
	}
	if !c.Bool("update") {
		return importLine{Info: meta.Info(), Skipped: s.skipped, Existing: true}, nil
	}
	var path []session.Node
	if meta.Head != 0 {
		if err := st.Path(id, meta.Head, func(n *session.Node) error {
			path = append(path, *n)
			return nil
		}); err != nil {
			return importLine{}, err
		}
	}
	res := session.UpdateFromShare(&meta, path, s.share, c.Now)
	if res.Added > 0 && meta.Source != nil && meta.Source.Path == "" {
		meta.Source.Path = s.source.Path // imported by a wc that did not record it
	}
	if res.Added > 0 {
		if err := st.Commit(&meta, res.Nodes); err != nil {
			return importLine{}, err
		}
	}
	return importLine{Info: meta.Info(), Skipped: s.skipped, Existing: true, Added: &res.Added}, nil
}

// checkShareSizes applies the message size limit to every path of a share.
func checkShareSizes(sh *session.Share) error {
	if err := session.CheckSizes(sh.Messages, false); err != nil {
		return err
	}
	for _, b := range sh.Branches {
		if err := session.CheckSizes(b.Messages, false); err != nil {
			return err
		}
	}
	return session.CheckSizes(sh.Unreached(), false)
}
