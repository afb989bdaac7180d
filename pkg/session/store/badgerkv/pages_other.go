//go:build !linux

package badgerkv

// ReleaseTablePages has no portable equivalent; elsewhere the resident set
// of a long read includes the table pages it touched.
func ReleaseTablePages(string, func(uint64) bool) (int, error) { return 0, nil }
