package open

import (
	"time"

	"github.com/wctoolkit/wc/pkg/session/store"
)

// DirectOptions is how a command opens the store without the resident
// process (see Spec.Direct).
type DirectOptions struct {
	Dir         string
	Mode        store.Mode
	LockTimeout time.Duration
	Sync        bool
	Bulk        bool // batch work: see OpenBatch
	OtherOwner  bool // --other-owner: see storedir.Trust
}
