package infer

import (
	"fmt"
	"os"

	"github.com/supervisor-dev/supervisor/internal/modelid"
)

// loadAttempts bounds how often openIdentified loads a model file that
// changes while it loads.
const loadAttempts = 3

// openIdentified opens the model file at path with open and names it by
// the content identity of the bytes loaded (internal/modelid), which
// every answer then carries (worker.ModelIDHeader) and the metadata
// shows. The file is hashed before the load and its stamp (inode, size,
// mtime, ctime) checked after it: ONNX Runtime reads the file by path,
// more than once, so a file replaced meanwhile would otherwise serve
// weights its identity does not name. Such a load is done again, up to
// loadAttempts times.
func openIdentified(path string, open func() (*model, error)) (*model, error) {
	for range loadAttempts {
		id, st, err := modelid.Hash(path)
		if err != nil {
			return nil, err
		}
		mod, err := open()
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(path); err == nil && modelid.StampOf(fi) == st {
			mod.identity, mod.md.Identity = id, id
			return mod, nil
		}
		mod.close()
	}
	return nil, fmt.Errorf("model file %q changed while it was loaded, %d times: wait for whatever writes it to finish (or replace it with a rename), then reload", path, loadAttempts)
}
