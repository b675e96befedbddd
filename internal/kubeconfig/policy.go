package kubeconfig

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// ServerPolicy restricts the API servers a kubeconfig may name. The zero
// policy allows any absolute http(s) URL.
//
// Names are never resolved when a kubeconfig is checked. A literal IP must lie
// in AllowedCIDRs, and a name must match AllowedHosts; with AllowedCIDRs
// alone, only literal IPs pass. With AllowedCIDRs, Apply also gives the REST
// config a dialer that refuses every address outside them, checked on the
// socket after resolution, so DNS rebinding cannot reach other networks.
type ServerPolicy struct {
	// HTTPSOnly refuses plain http servers.
	HTTPSOnly bool
	// AllowedHosts are lower-case host names; "*.example.com" matches any
	// name under example.com, not example.com itself. Ports are not checked.
	AllowedHosts []string
	// AllowedCIDRs are the networks literal IPs and every connection must
	// lie in.
	AllowedCIDRs []netip.Prefix
}

// ParseServerPolicy builds a policy from flag values: allow holds host
// names, "*.domain" wildcards, IP addresses and CIDRs, in any order.
func ParseServerPolicy(httpsOnly bool, allow []string) (ServerPolicy, error) {
	p := ServerPolicy{HTTPSOnly: httpsOnly}
	for _, entry := range allow {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if prefix, ok, err := parseNetwork(entry); err != nil {
			return ServerPolicy{}, err
		} else if ok {
			p.AllowedCIDRs = append(p.AllowedCIDRs, prefix)
			continue
		}
		host := strings.ToLower(entry)
		if errs := validation.IsDNS1123Subdomain(strings.TrimPrefix(host, "*.")); len(errs) > 0 {
			return ServerPolicy{}, fmt.Errorf("allowed server %q is neither a host name, an IP address nor a CIDR: %s",
				entry, strings.Join(errs, "; "))
		}
		p.AllowedHosts = append(p.AllowedHosts, host)
	}
	return p, nil
}

// parseNetwork parses an IP address or a CIDR; ok is false for anything else.
func parseNetwork(entry string) (netip.Prefix, bool, error) {
	if strings.Contains(entry, "/") {
		prefix, err := netip.ParsePrefix(entry)
		if err != nil {
			return netip.Prefix{}, false, fmt.Errorf("allowed server %q is not a CIDR: %w", entry, err)
		}
		if prefix.Addr().Is4In6() {
			return netip.Prefix{}, false, fmt.Errorf("allowed server %q: write IPv4 networks in IPv4 form", entry)
		}
		return prefix.Masked(), true, nil
	}
	addr, err := netip.ParseAddr(entry)
	if err != nil {
		return netip.Prefix{}, false, nil
	}
	if addr.Zone() != "" {
		return netip.Prefix{}, false, fmt.Errorf("allowed server %q: an IP address with a zone", entry)
	}
	addr = addr.Unmap()
	return netip.PrefixFrom(addr, addr.BitLen()), true, nil
}

// Restricted reports whether the policy refuses anything.
func (p ServerPolicy) Restricted() bool {
	return p.HTTPSOnly || len(p.AllowedHosts) > 0 || len(p.AllowedCIDRs) > 0
}

// Check refuses a server URL outside the policy, without resolving names.
func (p ServerPolicy) Check(server *url.URL) error {
	if p.HTTPSOnly && server.Scheme != "https" {
		return fmt.Errorf("%w: plain http is not allowed, the server must be https", ErrServerNotAllowed)
	}
	if len(p.AllowedHosts) == 0 && len(p.AllowedCIDRs) == 0 {
		return nil
	}
	host := server.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		if len(p.AllowedCIDRs) > 0 && p.AllowsAddr(addr) {
			return nil
		}
		return fmt.Errorf("%w: %s is outside the allowed networks", ErrServerNotAllowed, quote(host))
	}
	if len(p.AllowedHosts) == 0 {
		return fmt.Errorf("%w: only IP addresses in the allowed networks are allowed, not the name %s",
			ErrServerNotAllowed, quote(host))
	}
	if p.allowsHost(host) {
		return nil
	}
	return fmt.Errorf("%w: host %s is not an allowed host", ErrServerNotAllowed, quote(host))
}

// allowsHost matches a name against AllowedHosts.
func (p ServerPolicy) allowsHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return slices.ContainsFunc(p.AllowedHosts, func(allowed string) bool {
		if suffix, ok := strings.CutPrefix(allowed, "*"); ok {
			return strings.HasPrefix(suffix, ".") && len(host) > len(suffix) && strings.HasSuffix(host, suffix)
		}
		return host == allowed
	})
}

// AllowsAddr reports whether a connection to addr is allowed: always without
// AllowedCIDRs, else when a CIDR holds it (IPv4-mapped IPv6 as IPv4).
func (p ServerPolicy) AllowsAddr(addr netip.Addr) bool {
	if len(p.AllowedCIDRs) == 0 {
		return true
	}
	addr = addr.WithZone("").Unmap()
	return slices.ContainsFunc(p.AllowedCIDRs, func(c netip.Prefix) bool { return c.Contains(addr) })
}

// DialContext returns a dialer that refuses to connect outside
// AllowedCIDRs, or nil without them. The check runs on the resolved address
// of each socket, just before it connects.
func (p ServerPolicy) DialContext() func(ctx context.Context, network, address string) (net.Conn, error) {
	if len(p.AllowedCIDRs) == 0 {
		return nil
	}
	d := &net.Dialer{
		Timeout:   30 * time.Second, // client-go's defaults
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot check the address %s", ErrServerNotAllowed, quote(address))
			}
			if !p.AllowsAddr(ap.Addr()) {
				return fmt.Errorf("%w: %s is outside the allowed networks", ErrServerNotAllowed, ap.Addr())
			}
			return nil
		},
	}
	return d.DialContext
}

// Apply checks cfg's server against the policy and, with AllowedCIDRs,
// replaces its dialer with DialContext. A proxy from the environment is
// dialled like a server, so it must lie in AllowedCIDRs too.
func (p ServerPolicy) Apply(cfg *rest.Config) error {
	server, err := ServerURL(cfg.Host)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := p.Check(server); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if dial := p.DialContext(); dial != nil {
		cfg.Dial = dial
	}
	return nil
}
