//lint:file-ignore SA1019 HeaderMatcher's deprecated specifiers (exact_match and the like) are still honoured by Envoy, so the simulated client honours them too.

package simclient

// The simulated data plane: what Envoy would answer to one request, computed from what
// the client accepted. It follows Envoy's routing for the common cases and documents
// where it does not (see RouteRequest). Nothing is forwarded; every Result says so.

import (
	"hash/fnv"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcher "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/xds-workbench/lab/shared/resources"
)

// DefaultHost is the request's host (:authority) when Request.Headers sets none. The
// simulated client has no ports, so it is the bare name: a real request to
// localhost:PORT carries the port, which Envoy matches against domains unless the route
// configuration sets ignore_port_in_host_matching.
const DefaultHost = "localhost"

// Request is one simulated HTTP request (method GET, scheme http).
type Request struct {
	// Path is the :path, query string included. Path matching strips the query string
	// (and a fragment), as Envoy does; query_parameters matchers read it.
	Path string
	// Headers are request headers; names are case-insensitive. ":authority" (or "host")
	// sets the host, DefaultHost otherwise.
	Headers map[string]string
	// ID is the request ID (x-request-id, unless Headers sets one). It seeds every
	// choice the simulation makes (weighted cluster, endpoint), so one ID always gets
	// the same answer.
	ID string
}

// Result is the simulated data plane's answer to one request.
type Result struct {
	Status int
	// Flags are Envoy's response flags: NR (no route), NC (no cluster: unknown, or an
	// EDS cluster still warming), UH (no host), "-" for a routed or direct answer, or
	// "no_listener" (Status 0: nothing listens).
	Flags string
	// Listener is the listener that took the request ("" with no listener).
	Listener string
	// Route is the name of the matched route ("" when none matched or it has no name).
	Route string
	// Cluster is the cluster the route chose ("" for a direct response or no route).
	Cluster  string
	Endpoint string // host:port of the chosen endpoint, "" when none
	// Server is the "server" header Envoy would write on the answer: the listener's
	// HTTP connection manager server_name, "envoy" when unset ("" with no listener).
	Server string
	// Simulated is always true: no proxy forwarded anything.
	Simulated bool
}

// Route is RouteRequest for a GET of path with no headers and an empty request ID.
func (c *Client) Route(path string) Result { return c.RouteRequest(Request{Path: path}) }

// RouteRequest computes what req would get from what the client has accepted, as Envoy
// would route it: listener -> HTTP connection manager -> route configuration (RDS or
// inline) -> virtual host -> route -> cluster -> endpoint.
//
// Where it differs from Envoy, deliberately:
//   - Listener: the simulated client has no ports, so among the accepted listeners with
//     an HTTP connection manager that uses RDS or an inline route_config, the one with
//     the lowest name takes every request; within it, the first such manager (filter
//     chain order, default_filter_chain last). filter_chain_match is not evaluated.
//   - A listener whose RDS route configuration is not accepted yet answers 404 NR (Envoy
//     would keep such a new listener warming).
//   - Virtual hosts: exact domain, then the longest "*suffix", then the longest
//     "prefix*", then "*", against the host without a port (DefaultHost).
//   - Route matchers not modelled (path_match_policy, connect_matcher, cookies,
//     tls_context requiring TLS, dynamic_metadata, filter_state) never match;
//     runtime_fraction is ignored (the route matches). Path normalisation is not done.
//   - Endpoints: chosen from a hash of the request ID in proportion to
//     load_balancing_weight, not by Envoy's round robin or the cluster's lb_policy.
//     Only the first priority that has a healthy host is used, in panic mode (every
//     host) when its healthy share is below healthy_panic_threshold (default 50%).
//   - Custom cluster types and ORIGINAL_DST have no hosts here: 503 UH.
func (c *Client) RouteRequest(req Request) Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return routeIn(c.state.Accepted, c.active, req)
}

func routeIn(acc map[resources.Type]map[string]Entry, active map[string]*endpoint.ClusterLoadAssignment, req Request) Result {
	res := Result{Simulated: true, Status: 0, Flags: "no_listener"}
	name, m := routingListener(acc)
	if m == nil {
		return res // connection refused: nothing listens
	}
	res.Listener = name
	res.Server = m.GetServerName()
	if res.Server == "" {
		res.Server = "envoy"
	}
	res.Status, res.Flags = 404, "NR"
	rc := m.GetRouteConfig()
	if rc == nil {
		rc, _ = acc[resources.RDS][m.GetRds().GetRouteConfigName()].Resource.(*route.RouteConfiguration)
	}
	if rc == nil {
		return res
	}
	path, rawQuery, _ := strings.Cut(req.Path, "?")
	path, _, _ = strings.Cut(path, "#")
	rawQuery, _, _ = strings.Cut(rawQuery, "#")
	query, _ := url.ParseQuery(rawQuery) // a malformed pair is dropped, the rest kept
	hdrs := requestHeaders(req)
	vh := virtualHost(rc.GetVirtualHosts(), hdrs[":authority"])
	if vh == nil {
		return res
	}
	for _, r := range vh.GetRoutes() {
		if !routeMatches(r.GetMatch(), path, query, hdrs) {
			continue
		}
		res.Route = r.GetName()
		switch a := r.GetAction().(type) {
		case *route.Route_Route:
			return forward(res, a.Route, acc, active, hdrs, req.ID)
		case *route.Route_DirectResponse:
			if s := a.DirectResponse.GetStatus(); s != 0 {
				res.Status, res.Flags = int(s), "-"
			}
		case *route.Route_Redirect:
			res.Status, res.Flags = redirectStatus(a.Redirect.GetResponseCode()), "-"
		}
		// Any other action (non_forwarding, filter_action) gives the router nothing to
		// do: 404 NR, as Envoy's router answers.
		return res
	}
	return res
}

// routingListener picks the listener that takes the request: the lowest-named accepted
// listener with an HTTP connection manager that has routes (RDS or inline).
func routingListener(acc map[resources.Type]map[string]Entry) (string, *hcm.HttpConnectionManager) {
	names := make([]string, 0, len(acc[resources.LDS]))
	for n := range acc[resources.LDS] {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		l, ok := acc[resources.LDS][n].Resource.(*listener.Listener)
		if !ok {
			continue
		}
		for _, m := range httpConnectionManagers(l) {
			if m.GetRds() != nil || m.GetRouteConfig() != nil {
				return n, m
			}
		}
	}
	return "", nil
}

// requestHeaders lowercases the request's header names and fills in the pseudo-headers
// and x-request-id, so header matchers see what Envoy's would.
func requestHeaders(req Request) map[string]string {
	h := make(map[string]string, len(req.Headers)+5)
	for k, v := range req.Headers {
		h[strings.ToLower(k)] = v
	}
	if _, ok := h[":authority"]; !ok {
		if host, ok := h["host"]; ok {
			h[":authority"] = host
		} else {
			h[":authority"] = DefaultHost
		}
	}
	for k, v := range map[string]string{":path": req.Path, ":method": "GET", ":scheme": "http"} {
		if _, ok := h[k]; !ok {
			h[k] = v
		}
	}
	if _, ok := h["x-request-id"]; !ok && req.ID != "" {
		h["x-request-id"] = req.ID
	}
	return h
}

// virtualHost selects by domain in Envoy's order: exact, longest suffix wildcard
// ("*.example.com"), longest prefix wildcard ("example.*"), then "*". Matching is
// case-insensitive; a wildcard matches at least one character.
func virtualHost(vhs []*route.VirtualHost, host string) *route.VirtualHost {
	host = strings.ToLower(host)
	var suffix, prefix, star *route.VirtualHost
	suffixLen, prefixLen := -1, -1
	for _, vh := range vhs {
		for _, d := range vh.GetDomains() {
			d = strings.ToLower(d)
			switch {
			case d == "*":
				if star == nil {
					star = vh
				}
			case d == host:
				return vh
			case strings.HasPrefix(d, "*") && len(host) > len(d)-1 && strings.HasSuffix(host, d[1:]):
				if len(d) > suffixLen {
					suffix, suffixLen = vh, len(d)
				}
			case strings.HasSuffix(d, "*") && len(host) > len(d)-1 && strings.HasPrefix(host, d[:len(d)-1]):
				if len(d) > prefixLen {
					prefix, prefixLen = vh, len(d)
				}
			}
		}
	}
	switch {
	case suffix != nil:
		return suffix
	case prefix != nil:
		return prefix
	}
	return star
}

// routeMatches evaluates a route's match; a nil or unsupported match never matches.
func routeMatches(m *route.RouteMatch, path string, query url.Values, hdrs map[string]string) bool {
	if m == nil || !pathMatches(m, path) {
		return false
	}
	if m.GetGrpc() != nil && !strings.HasPrefix(hdrs["content-type"], "application/grpc") {
		return false
	}
	// The simulated request is plaintext and carries no metadata or filter state.
	if tc := m.GetTlsContext(); tc.GetPresented().GetValue() || tc.GetValidated().GetValue() {
		return false
	}
	if len(m.GetCookies()) > 0 || len(m.GetDynamicMetadata()) > 0 || len(m.GetFilterState()) > 0 {
		return false
	}
	for _, hm := range m.GetHeaders() {
		if !headerMatches(hm, hdrs) {
			return false
		}
	}
	for _, qm := range m.GetQueryParameters() {
		if !queryMatches(qm, query) {
			return false
		}
	}
	return true
}

func pathMatches(m *route.RouteMatch, path string) bool {
	// case_sensitive (default true) applies to path, prefix and path_separated_prefix.
	fold := m.GetCaseSensitive() != nil && !m.GetCaseSensitive().GetValue()
	hasPrefix := func(p string) bool {
		if fold {
			return len(path) >= len(p) && strings.EqualFold(path[:len(p)], p)
		}
		return strings.HasPrefix(path, p)
	}
	switch s := m.GetPathSpecifier().(type) {
	case *route.RouteMatch_Path:
		return len(path) == len(s.Path) && hasPrefix(s.Path)
	case *route.RouteMatch_Prefix:
		return hasPrefix(s.Prefix)
	case *route.RouteMatch_PathSeparatedPrefix:
		// The prefix must end at a path segment: /api matches /api and /api/x, not /apis.
		p := s.PathSeparatedPrefix
		return hasPrefix(p) && (len(path) == len(p) || path[len(p)] == '/')
	case *route.RouteMatch_SafeRegex:
		return fullMatch(s.SafeRegex.GetRegex(), path)
	}
	return false
}

// headerMatches follows Envoy's HeaderUtility: a missing header fails every matcher
// (inverted or not) except present_match, unless treat_missing_header_as_empty.
func headerMatches(hm *route.HeaderMatcher, hdrs map[string]string) bool {
	if hm == nil {
		return false
	}
	v, ok := hdrs[strings.ToLower(hm.GetName())]
	if p, isPresent := hm.GetHeaderMatchSpecifier().(*route.HeaderMatcher_PresentMatch); isPresent {
		return (ok == p.PresentMatch) != hm.GetInvertMatch()
	}
	if hm.GetHeaderMatchSpecifier() == nil {
		// No specifier: Envoy treats it as "the header is present".
		return ok != hm.GetInvertMatch()
	}
	if !ok {
		if !hm.GetTreatMissingHeaderAsEmpty() {
			return false
		}
		v = ""
	}
	var match bool
	// The deprecated specifiers (exact, prefix, suffix, contains, safe_regex) are still
	// honoured by Envoy, so the simulated client honours them too (see lint:file-ignore).
	switch s := hm.GetHeaderMatchSpecifier().(type) {
	case *route.HeaderMatcher_ExactMatch:
		match = s.ExactMatch == "" || v == s.ExactMatch // legacy: empty matches any value
	case *route.HeaderMatcher_PrefixMatch:
		match = strings.HasPrefix(v, s.PrefixMatch)
	case *route.HeaderMatcher_SuffixMatch:
		match = strings.HasSuffix(v, s.SuffixMatch)
	case *route.HeaderMatcher_ContainsMatch:
		match = strings.Contains(v, s.ContainsMatch)
	case *route.HeaderMatcher_SafeRegexMatch:
		match = fullMatch(s.SafeRegexMatch.GetRegex(), v)
	case *route.HeaderMatcher_RangeMatch:
		n, err := strconv.ParseInt(v, 10, 64)
		match = err == nil && n >= s.RangeMatch.GetStart() && n < s.RangeMatch.GetEnd()
	case *route.HeaderMatcher_StringMatch:
		match = stringMatches(s.StringMatch, v)
	}
	return match != hm.GetInvertMatch()
}

// queryMatches checks the first value of a query parameter; with no string_match the
// parameter only has to be present.
func queryMatches(qm *route.QueryParameterMatcher, query url.Values) bool {
	vs, ok := query[qm.GetName()]
	if qm == nil || !ok || len(vs) == 0 {
		return false
	}
	if sm := qm.GetStringMatch(); sm != nil {
		return stringMatches(sm, vs[0])
	}
	return true
}

func stringMatches(sm *matcher.StringMatcher, v string) bool {
	fold := sm.GetIgnoreCase()
	eq := func(a, b string) bool { return a == b || (fold && strings.EqualFold(a, b)) }
	switch p := sm.GetMatchPattern().(type) {
	case *matcher.StringMatcher_Exact:
		return eq(v, p.Exact)
	case *matcher.StringMatcher_Prefix:
		return len(v) >= len(p.Prefix) && eq(v[:len(p.Prefix)], p.Prefix)
	case *matcher.StringMatcher_Suffix:
		return len(v) >= len(p.Suffix) && eq(v[len(v)-len(p.Suffix):], p.Suffix)
	case *matcher.StringMatcher_Contains:
		if fold {
			return strings.Contains(strings.ToLower(v), strings.ToLower(p.Contains))
		}
		return strings.Contains(v, p.Contains)
	case *matcher.StringMatcher_SafeRegex:
		return fullMatch(p.SafeRegex.GetRegex(), v)
	}
	return false // custom or unset: not modelled
}

// fullMatch matches a whole string against an RE2 pattern (Go's regexp is RE2 too); a
// pattern that does not compile matches nothing.
func fullMatch(pattern, s string) bool {
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	return err == nil && re.MatchString(s)
}

func redirectStatus(c route.RedirectAction_RedirectResponseCode) int {
	switch c {
	case route.RedirectAction_FOUND:
		return 302
	case route.RedirectAction_SEE_OTHER:
		return 303
	case route.RedirectAction_TEMPORARY_REDIRECT:
		return 307
	case route.RedirectAction_PERMANENT_REDIRECT:
		return 308
	}
	return 301
}

func clusterNotFoundStatus(c route.RouteAction_ClusterNotFoundResponseCode) int {
	switch c {
	case route.RouteAction_NOT_FOUND:
		return 404
	case route.RouteAction_INTERNAL_SERVER_ERROR:
		return 500
	}
	return 503
}

// forward resolves a route action to a cluster and an endpoint.
func forward(res Result, ra *route.RouteAction, acc map[resources.Type]map[string]Entry, active map[string]*endpoint.ClusterLoadAssignment, hdrs map[string]string, id string) Result {
	name := routeCluster(ra, hdrs, id)
	res.Cluster = name
	cl, ok := acc[resources.CDS][name].Resource.(*cluster.Cluster)
	if name == "" || !ok || cl == nil {
		res.Status, res.Flags = clusterNotFoundStatus(ra.GetClusterNotFoundResponseCode()), "NC"
		return res
	}
	cla, ok := assignment(cl, acc, active)
	if !ok {
		// A warming cluster is not in Envoy's thread-local cluster manager yet: to the
		// router it does not exist.
		res.Status, res.Flags = clusterNotFoundStatus(ra.GetClusterNotFoundResponseCode()), "NC"
		return res
	}
	threshold := 50.0
	if p := cl.GetCommonLbConfig().GetHealthyPanicThreshold(); p != nil {
		threshold = p.GetValue()
	}
	ep := chooseEndpoint(cla, threshold, id)
	if ep == "" {
		res.Status, res.Flags = 503, "UH"
		return res
	}
	res.Status, res.Flags, res.Endpoint = 200, "-", ep
	return res
}

// routeCluster is the cluster a route action names: cluster, cluster_header, or one of
// weighted_clusters. "" when it names none (cluster specifier plugins are not modelled).
func routeCluster(ra *route.RouteAction, hdrs map[string]string, id string) string {
	switch s := ra.GetClusterSpecifier().(type) {
	case *route.RouteAction_Cluster:
		return s.Cluster
	case *route.RouteAction_ClusterHeader:
		return hdrs[strings.ToLower(s.ClusterHeader)]
	case *route.RouteAction_WeightedClusters:
		return weightedCluster(s.WeightedClusters, hdrs, id)
	}
	return ""
}

// weightedCluster picks a cluster in proportion to the weights, from the request's
// header_name value when it is a number (as Envoy does) or else a hash of the request
// ID, where Envoy draws a random number: the same ID always gets the same cluster.
func weightedCluster(wc *route.WeightedCluster, hdrs map[string]string, id string) string {
	var total uint64
	for _, cw := range wc.GetClusters() {
		total += uint64(cw.GetWeight().GetValue())
	}
	if total == 0 {
		return ""
	}
	v := choice(id, "weighted_clusters")
	if h := wc.GetHeaderName(); h != "" {
		if n, err := strconv.ParseUint(hdrs[strings.ToLower(h)], 10, 64); err == nil {
			v = n
		}
	}
	x := v % total
	for _, cw := range wc.GetClusters() {
		w := uint64(cw.GetWeight().GetValue())
		if x < w {
			if cw.GetClusterHeader() != "" {
				return hdrs[strings.ToLower(cw.GetClusterHeader())]
			}
			return cw.GetName()
		}
		x -= w
	}
	return ""
}

// assignment is the endpoints a cluster routes with. ok is false for an EDS cluster
// that has none yet (never active: warming). STATIC, STRICT_DNS and LOGICAL_DNS use the
// inline load_assignment; other types have no hosts the simulation knows.
func assignment(cl *cluster.Cluster, acc map[resources.Type]map[string]Entry, active map[string]*endpoint.ClusterLoadAssignment) (*endpoint.ClusterLoadAssignment, bool) {
	if cl.GetClusterType() != nil {
		return nil, true
	}
	switch cl.GetType() {
	case cluster.Cluster_EDS:
		if cla, ok := acc[resources.EDS][edsServiceName(cl)].Resource.(*endpoint.ClusterLoadAssignment); ok && cla != nil {
			return cla, true
		}
		if cla := active[cl.GetName()]; cla != nil {
			return cla, true // the previous version still serves while this one warms
		}
		return nil, false
	case cluster.Cluster_STATIC, cluster.Cluster_STRICT_DNS, cluster.Cluster_LOGICAL_DNS:
		return cl.GetLoadAssignment(), true
	}
	return nil, true
}

type host struct {
	addr   string
	weight uint64
}

// chooseEndpoint picks one endpoint's address from the first priority with a healthy
// host (panic mode, every host of it, below the threshold percentage), weighted by
// load_balancing_weight, from a hash of the request ID. "" when there is none.
func chooseEndpoint(cla *endpoint.ClusterLoadAssignment, threshold float64, id string) string {
	all := map[uint32][]host{}
	healthy := map[uint32][]host{}
	for _, loc := range cla.GetEndpoints() {
		p := loc.GetPriority()
		for _, lbe := range loc.GetLbEndpoints() {
			addr := address(lbe.GetEndpoint().GetAddress())
			if addr == "" {
				continue // endpoint_name or no address: nothing to reach
			}
			h := host{addr: addr, weight: 1}
			if w := lbe.GetLoadBalancingWeight(); w != nil && w.GetValue() > 0 {
				h.weight = uint64(w.GetValue())
			}
			all[p] = append(all[p], h)
			switch lbe.GetHealthStatus() {
			case core.HealthStatus_UNHEALTHY, core.HealthStatus_DRAINING, core.HealthStatus_TIMEOUT:
			default:
				healthy[p] = append(healthy[p], h)
			}
		}
	}
	if len(all) == 0 {
		return ""
	}
	prios := make([]uint32, 0, len(all))
	for p := range all {
		prios = append(prios, p)
	}
	slices.Sort(prios)
	hosts := all[prios[0]] // no healthy host anywhere: panic on the first priority
	for _, p := range prios {
		if len(healthy[p]) > 0 {
			hosts = healthy[p]
			if 100*float64(len(healthy[p])) < threshold*float64(len(all[p])) {
				hosts = all[p]
			}
			break
		}
	}
	var total uint64
	for _, h := range hosts {
		total += h.weight
	}
	x := choice(id, "endpoint") % total
	for _, h := range hosts {
		if x < h.weight {
			return h.addr
		}
		x -= h.weight
	}
	return hosts[len(hosts)-1].addr
}

// address formats an endpoint address as host:port (a pipe as its path).
func address(a *core.Address) string {
	if p := a.GetPipe(); p != nil {
		return p.GetPath()
	}
	sa := a.GetSocketAddress()
	if sa.GetAddress() == "" {
		return ""
	}
	return net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))
}

// choice is a well-mixed 64-bit hash of the request ID for one decision (salt), so the
// weighted-cluster and endpoint choices of one request are independent.
func choice(id, salt string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(salt))
	h.Write([]byte{0})
	h.Write([]byte(id))
	// splitmix64 finaliser: FNV's low bits vary little between IDs like req-1, req-2.
	z := h.Sum64()
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
