package badgerkv

import (
	"errors"
	"strings"

	"github.com/dgraph-io/badger/v4/y"
)

// Message is one line for an error of Badger's: its errors are
// chains of contexts ("cannot create memtable err: newMemTable err: …
// err: open …: permission denied"), sometimes on several lines, and may
// end in a hex dump of a value (transcript content). The line keeps the
// outermost context and the cause, and at most maxLen bytes.
func Message(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if parts := strings.Split(msg, " err: "); len(parts) > 1 {
		msg = parts[0] + " (" + parts[len(parts)-1] + ")"
	}
	const maxLen = 240
	if len(msg) > maxLen {
		msg = strings.ToValidUTF8(msg[:maxLen], "") + "…"
	}
	return msg
}

// damageSigns are the words of Badger's errors for data that fails its
// checks: a checksum, a length, a table or value the store's own records
// point at and cannot find.
var damageSigns = []string{
	"checksum mismatch", "Checksum mismatch", "failed to read index", "failed to initialize table",
	"invalid checksum length", "file does not exist for table", "Invalid read", "Invalid value pointer offset",
	"End of file", "failed to decompress", "corrupt input", "Encryption key mismatch", "Invalid datakey id",
	"MANIFEST invalid", "MANIFEST removes non-existing table", "Manifest file might be corrupted",
	"block out of index", "manifest has bad magic", "Unable to read", "while reading block",
	"sanity text", "reading IV for key registry", "keyRegistryIterator",
}

// IsDamage tells Badger's error for a damaged file.
func IsDamage(err error) bool {
	if errors.Is(err, y.ErrChecksumMismatch) || errors.Is(err, y.ErrEOF) {
		return true
	}
	msg := err.Error()
	for _, s := range damageSigns {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
