package version

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The lab's line carries the VCS stamp when the build has one, "(devel)" without.
func TestLabVersion(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Path: "github.com/xds-workbench/lab", Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "4fdcec8aa"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-12-01T17:00:00Z"},
	}}
	assert.Equal(t, "v0.3.0 (revision 4fdcec8aa, modified, committed 2026-12-01T17:00:00Z)", labVersion(stamped))
	clean := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}}
	assert.Equal(t, "(devel) (revision abc)", labVersion(clean))
	assert.Equal(t, "(devel) (no VCS revision: built without VCS stamping)", labVersion(&debug.BuildInfo{}))
	assert.Equal(t, "(devel) (no build info)", labVersion(nil))
}
