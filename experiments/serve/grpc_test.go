package serve

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/xds-workbench/lab/experiments/grpcclient/grpcclienttest"
	"github.com/xds-workbench/lab/shared/loopback/loopbacktest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// TestServeWithGRPCClient drives lab serve --client grpc --with-inventory: grpc-go's own
// client is served the proxyless shape, ACKs every type, and its RPCs reach v1, then v2
// after port; invalid is NACKed with grpc-go's reason while v2 keeps answering.
func TestServeWithGRPCClient(t *testing.T) {
	o := serveTestOptions(t, protocol.SotW)
	ports := loopbacktest.FreePorts(t, 3)
	o.Client, o.WithInventory, o.GRPCCommand = ClientGRPC, true, grpcclienttest.Command(t)
	o.ListenerPort, o.InventoryPort, o.V2Port = ports[0], ports[1], ports[2]
	o.NackPolicy = "hold" // one NACK, not the library's endless re-send to this client too
	s := startServeSession(t, o)
	s.waitLine(30*time.Second, fmt.Sprintf(`^out: grpc client: pid \d+, grpc-go's xDS client dialing xds:///quote-listener; front door http://127\.0\.0\.1:%d \(type request to send /quote\?sku=paper through it as one RPC\), CSDS on 127\.0\.0\.1:\d+$`, o.ListenerPort))
	s.waitLine(30*time.Second, `^out: stream 1 open: node teaching-envoy from 127\.0\.0\.1:\d+ \(sotw ADS\)$`)
	for _, typ := range []string{"LDS", "RDS", "CDS", "EDS"} {
		s.waitLine(30*time.Second, `^out: stream 1 `+typ+` ACK version 1$`)
	}
	s.request(t, fmt.Sprintf(`^out: request serve-\d+: 200, answered by v1 \(127\.0\.0\.1:%d\), rpc OK$`, o.InventoryPort))

	s.send(fmt.Sprintf("port %d", o.V2Port))
	s.waitLine(30*time.Second, `^out: stream 1 EDS ACK version 2$`)
	s.request(t, fmt.Sprintf(`^out: request serve-\d+: 200, answered by v2 \(127\.0\.0\.1:%d\), rpc OK$`, o.V2Port))

	s.send("invalid")
	s.waitLine(30*time.Second, `^out: stream 1 RDS NACK of version 3 \(the client keeps version 2\): error parsing "RouteConfigResource" response: resource "quote-route": received route is invalid: `)
	st := streamStatus(t, s.waitStatus(30*time.Second, "RDS NACKED", func(st serveStatus) bool {
		return len(st.Streams) == 1 && st.Streams[0].Types["RDS"].State == xdslog.TypeNacked
	}))
	assert.Equal(t, "2", st.Types["RDS"].Version, "grpc-go keeps running version 2 of the route")
	assert.Contains(t, st.Types["RDS"].Error, "doesn't have a path specifier", "grpc-go's own reason")
	s.request(t, `^out: request serve-\d+: 200, answered by v2 `)
	s.stop()
	s.waitLine(10*time.Second, `^out: stream 1 closed: `)
}
