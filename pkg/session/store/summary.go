package store

import (
	"fmt"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// DecodeSummary reads the listing summary of session id (see
// record.DecodeSummary); a malformed one is damage.
func DecodeSummary(id ID, v []byte) (session.Info, error) {
	info, ok := record.DecodeSummary(id.String(), v)
	if !ok {
		return session.Info{}, DamagedListing(id)
	}
	return info, nil
}

// AppendSummaryJSON appends the line wc-ls prints for session id, whose
// listing entry holds summary (see record.AppendSummaryJSON).
func AppendSummaryJSON(dst []byte, id ID, summary []byte) ([]byte, error) {
	line, ok := record.AppendSummaryJSON(dst, id.String(), summary)
	if !ok {
		return dst, DamagedListing(id)
	}
	return line, nil
}

// DamagedListing is the error of a summary that does not decode.
func DamagedListing(id ID) error {
	return &KindError{Msg: fmt.Sprintf("store: the listing entry of session %s is damaged", id), Kind: ErrDamaged}
}
