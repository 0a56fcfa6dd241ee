package grpcclient

import (
	"encoding/json"
	"fmt"

	"github.com/xds-workbench/lab/shared/loopback"
)

// bootstrap is the part of grpc-go's bootstrap JSON the workbench sets
// (internal/xds/bootstrap/bootstrap.go, Config): one xDS server, plaintext, and the node.
// No server_features: the workbench needs none of them (ignore_resource_deletion would
// change what a SotW removal means, xds_v3 is the only version grpc-go speaks).
type bootstrap struct {
	XDSServers []xdsServer `json:"xds_servers"`
	Node       node        `json:"node"`
}

type xdsServer struct {
	ServerURI    string        `json:"server_uri"`
	ChannelCreds []channelCred `json:"channel_creds"`
}

type channelCred struct {
	Type string `json:"type"`
}

type node struct {
	ID      string `json:"id"`
	Cluster string `json:"cluster"`
}

// NodeCluster is the node cluster every workbench grpc client reports.
const NodeCluster = "lab-grpc"

// Bootstrap is the bootstrap JSON for a client of the control plane at xdsAddr
// (127.0.0.1:PORT) as node nodeID.
func Bootstrap(xdsAddr, nodeID string) ([]byte, error) {
	if _, _, err := loopback.ParseAddr(xdsAddr); err != nil {
		return nil, fmt.Errorf("bootstrap: xDS server: %w", err)
	}
	if nodeID == "" {
		return nil, fmt.Errorf("bootstrap: empty node ID")
	}
	return json.Marshal(bootstrap{
		XDSServers: []xdsServer{{ServerURI: xdsAddr, ChannelCreds: []channelCred{{Type: "insecure"}}}},
		Node:       node{ID: nodeID, Cluster: NodeCluster},
	})
}
