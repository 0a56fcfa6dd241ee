package grpcclient

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-workbench/lab/experiments/inventory"
)

// Headers of a front-door answer.
const (
	// HeaderGRPCStatus is the RPC's status code name ("OK", "Unavailable").
	HeaderGRPCStatus = "x-grpc-status"
	// HeaderGRPCMessage is a failed RPC's status message: grpc-go's own words for why
	// (e.g. that the route's cluster does not exist).
	HeaderGRPCMessage = "x-grpc-message"
	// HeaderUpstream is the address of the backend the RPC went to, when it got one.
	HeaderUpstream = "x-upstream-host"
)

// ErrorBody is the JSON body of a failed RPC's answer.
type ErrorBody struct {
	Error      string `json:"error"`
	GRPCStatus string `json:"grpc_status"`
}

// frontDoor turns each GET into one unary RPC through the xDS channel: the method path
// is the URL path (the route table's paths are valid "/service/method" paths, and the
// teaching /quote the backend takes too: inventory/grpc.go), the query string is the
// request, x-request-id goes as metadata. The answer is the backend's body with 200, or
// the HTTP status the RPC's code stands for (inventory.HTTPStatus).
type frontDoor struct {
	conn    *grpc.ClientConn
	timeout time.Duration
}

func (f *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "the front door answers GET only", http.StatusMethodNotAllowed)
		return
	}
	id := r.Header.Get("x-request-id")
	ctx, cancel := context.WithTimeout(r.Context(), f.timeout)
	defer cancel()
	if id != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, inventory.MetadataRequestID, id)
		w.Header().Set("x-request-id", id)
	}
	var p peer.Peer
	out := &wrapperspb.BytesValue{}
	err := f.conn.Invoke(ctx, r.URL.Path, wrapperspb.String(r.URL.RawQuery), out, grpc.Peer(&p))
	if p.Addr != nil {
		w.Header().Set(HeaderUpstream, p.Addr.String())
	}
	st := status.Convert(err)
	w.Header().Set(HeaderGRPCStatus, st.Code().String())
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.Header().Set(HeaderGRPCMessage, st.Message())
		w.WriteHeader(inventory.HTTPStatus(st.Code()))
		_ = json.NewEncoder(w).Encode(ErrorBody{Error: st.Message(), GRPCStatus: st.Code().String()})
		return
	}
	_, _ = w.Write(out.GetValue())
}
