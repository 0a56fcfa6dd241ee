package resources

import (
	"errors"
	"fmt"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// ErrNotAPIListener is why a listener cannot serve a proxyless gRPC client: grpc-go
// v1.85.0 reads a listener as a client's only when it carries an api_listener, and then
// only one holding an HttpConnectionManager. Any other listener it takes for an xDS
// server's and ACKs (internal/xds/xdsclient/xdsresource/unmarshal_lds.go, processListener
// -> processServerSideListener), after which its channel fails with "client-side listener
// resource ... does not contain API listener configuration" without ever asking for the
// route (internal/xds/xdsdepmgr/xds_dependency_manager.go, onListenerResourceUpdate).
var ErrNotAPIListener = errors.New("a proxyless gRPC client needs an api_listener holding an HttpConnectionManager " +
	"(grpc-go ACKs any other listener as a server's and never asks for its route: internal/xds/xdsclient/xdsresource/unmarshal_lds.go, processListener; " +
	"internal/xds/xdsdepmgr/xds_dependency_manager.go, onListenerResourceUpdate)")

// CheckProxyless refuses a listener a proxyless gRPC client cannot use (ErrNotAPIListener),
// saying what it is instead: a socket listener, or an api_listener holding something else.
func CheckProxyless(l *listener.Listener) error {
	api := l.GetApiListener().GetApiListener()
	switch {
	case api == nil && l.GetAddress() != nil:
		return fmt.Errorf("listener %q is a socket listener (an address, no api_listener): %w", l.GetName(), ErrNotAPIListener)
	case api == nil:
		return fmt.Errorf("listener %q has no api_listener: %w", l.GetName(), ErrNotAPIListener)
	case !api.MessageIs(&hcm.HttpConnectionManager{}):
		return fmt.Errorf("listener %q: its api_listener holds %s: %w", l.GetName(), api.GetTypeUrl(), ErrNotAPIListener)
	}
	return nil
}
