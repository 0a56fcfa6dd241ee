package compare

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xds-workbench/lab/experiments/clientview"
	"github.com/xds-workbench/lab/shared/resources"
)

// ownViewFile is the client's own view the runner kept at the end of step, beside xds.log:
// grpc-go's CSDS response (<step>-csds.json) or Envoy's config dump (<step>-config.json).
func ownViewFile(r *Run, step string) string {
	if r.LogPath == "" || filepath.Base(r.LogPath) != "xds.log" {
		return ""
	}
	switch clientKind(r) {
	case clientview.ClientGRPC:
		return filepath.Join(filepath.Dir(r.LogPath), step+"-csds.json")
	case clientview.ClientEnvoy:
		return filepath.Join(filepath.Dir(r.LogPath), step+"-config.json")
	}
	return ""
}

// ownView reads the client's own view at the end of step (nil, nil when the run kept none).
func ownView(r *Run, step string) ([]clientview.Resource, error) {
	path := ownViewFile(r, step)
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if clientKind(r) == clientview.ClientEnvoy {
		return clientview.FromEnvoyConfigDump(b)
	}
	var resp statuspb.ClientStatusResponse
	if err := protojson.Unmarshal(b, &resp); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return clientview.FromCSDS(&resp, resources.NodeID)
}

// viewOf says how the client's own view at the end of step reports typ/name: "its
// <file> says NACKED at version 2", "... has no EDS ghost"; "" when the run kept no view.
func viewOf(r *Run, step, typ, name string) string {
	view, err := ownView(r, step)
	if err != nil {
		return "; its own view is unreadable: " + err.Error()
	}
	if view == nil {
		return ""
	}
	file := filepath.Base(ownViewFile(r, step))
	for _, v := range view {
		if v.Type == typ && v.Name == name {
			s := fmt.Sprintf("; its %s says %s %s %s", file, typ, name, v.Status)
			if v.Version != "" {
				s += " at version " + v.Version
			}
			return s
		}
	}
	return fmt.Sprintf("; its %s has no %s %s", file, typ, name)
}
