package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session/format"
)

// isOpencodeStorage reports the root of opencode's storage tree (before
// 1.2, ~/.local/share/opencode/storage): it holds session, message and
// part directories.
func isOpencodeStorage(dir string) bool {
	for _, sub := range []string{"session", "message", "part"} {
		if st, err := os.Stat(filepath.Join(dir, sub)); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// opencodeSessions lists the session files of a storage tree, in path
// order: storage/session/<project>/<ses>.json.
func opencodeSessions(root string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(root, "session", "*", "*.json"))
	sort.Strings(files)
	return files, err
}

// jsonFiles lists dir's *.json files in name order, which is id order
// (message and part ids ascend with time).
func jsonFiles(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	sort.Strings(files)
	return files
}

// readOpencodeSession reads one session of a storage tree and its
// messages and parts.
func readOpencodeSession(c *command.Ctx, root, sessionFile string) ([]format.Imported, error) {
	data, err := c.ReadFile(sessionFile)
	if err != nil {
		return nil, err
	}
	id := strings.TrimSuffix(filepath.Base(sessionFile), ".json")
	var msgs []format.OpencodeMessage
	for _, mf := range jsonFiles(filepath.Join(root, "message", id)) {
		info, err := c.ReadFile(mf)
		if err != nil {
			return nil, err
		}
		m := format.OpencodeMessage{Info: info}
		for _, pf := range jsonFiles(filepath.Join(root, "part", strings.TrimSuffix(filepath.Base(mf), ".json"))) {
			part, err := c.ReadFile(pf)
			if err != nil {
				return nil, err
			}
			m.Parts = append(m.Parts, part)
		}
		msgs = append(msgs, m)
	}
	imported, err := format.ImportOpencodeTree(data, msgs)
	if err != nil {
		return nil, &badFile{sessionFile, err.Error()}
	}
	return imported, nil
}
