package main

import (
	"bytes"
	"errors"
	"io"
	"os"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// restore puts the sessions of backups (wc-export --format backup) back,
// with their ids unless --new-ids. Every file is read and checked, and
// every id looked up, before anything is written; then each file is read
// again and its sessions committed one by one, so that memory holds one
// session at a time, however large the backup.
func restore(c *command.Ctx) error {
	for _, f := range []string{"import", "project", "system", "title", "sidechains", "select", "update", "again"} {
		if c.IsSet(f) {
			return command.Usagef("--restore takes no --%s: a backup's sessions come back as they were", f)
		}
	}
	files := c.Args().Slice()
	if len(files) == 0 {
		files = []string{"-"}
	}
	newIDs := c.Bool("new-ids")
	var ids []string
	seen := map[string]bool{}
	for _, f := range files {
		err := eachRestored(c, f, func(s *record.Restored) error {
			if !isSessionID(s.Meta.ID) {
				return command.DataErrf("%s: %q is not a session id", fileName(f), s.Meta.ID)
			}
			if seen[s.Meta.ID] && !newIDs {
				return command.DataErrf("%s: session %s is in the backup twice", fileName(f), s.Meta.ID).
					WithHint("--new-ids restores each under a new id")
			}
			seen[s.Meta.ID] = true
			ids = append(ids, s.Meta.ID)
			return nil
		})
		if err != nil {
			return err
		}
	}
	st, err := c.Open(store.Write)
	if err != nil {
		return err
	}
	if !newIDs {
		for _, id := range ids {
			_, err := st.Meta(id)
			if err == nil {
				return (&command.Error{Code: command.ExitFailure, Msg: "session " + id + " is in the store already; nothing was restored"}).
					WithHint("wc-rm it first, or restore copies under new ids with --new-ids")
			}
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
	}
	for _, f := range files {
		err := eachRestored(c, f, func(s *record.Restored) error {
			source := ""
			if newIDs {
				source, s.Meta.ID = s.Meta.ID, command.NewID()
			}
			// The blobs first: the metadata makes the session visible.
			for _, b := range s.Blobs {
				if err := st.PutBlob(s.Meta.ID, b.Sum, b.Data); err != nil {
					return err
				}
			}
			if err := st.Commit(&s.Meta, s.Nodes); err != nil {
				return err
			}
			return c.PrintJSON(struct {
				session.Info
				RestoredFrom string `json:"restored_from,omitempty"`
			}{s.Meta.Info(), source})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// eachRestored calls fn with each session of the backup in file ("-":
// stdin, read once and kept).
func eachRestored(c *command.Ctx, file string, fn func(*record.Restored) error) error {
	var r io.Reader
	if file == "-" {
		data, err := c.Stdin()
		if err != nil {
			return err
		}
		r = bytes.NewReader(data)
	} else {
		f, err := os.Open(file)
		if err != nil {
			_, err = c.ReadFile(file) // its error, worded as for every file
			return err
		}
		defer f.Close()
		r = f
	}
	br := record.NewBackupReader(r)
	n := 0
	for {
		s, err := br.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var inv *session.InvalidError
		if errors.As(err, &inv) {
			return command.DataErrf("%s: %v", fileName(file), err)
		}
		if err != nil {
			return &command.Error{Code: command.ExitFailure, Msg: "reading " + fileName(file) + ": " + err.Error()}
		}
		n++
		if err := fn(s); err != nil {
			return err
		}
	}
	if n == 0 {
		return command.DataErrf("%s holds no session", fileName(file))
	}
	return nil
}

func fileName(f string) string {
	if f == "-" {
		return "stdin"
	}
	return f
}

// isSessionID reports a UUID v4 in canonical form, as wc gives every
// session: the store refuses the rest (and keeps some ids for itself).
func isSessionID(s string) bool {
	id, err := store.ParseID(s)
	return err == nil && id.String() == s && id[6]>>4 == 4 && id[8]>>6 == 2
}
