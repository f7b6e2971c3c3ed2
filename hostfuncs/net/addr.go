package net

import "net/netip"

// nonPublic lists the address ranges the SSRF guard refuses unless a grant
// names them explicitly: everything that is not ordinary public unicast.
// Sources: the IANA IPv4 and IPv6 special-purpose address registries.
var nonPublic = func() []netip.Prefix {
	var prefixes []netip.Prefix
	for _, s := range []string{
		// IPv4
		"0.0.0.0/8",       // "this network"; 0.0.0.0 reaches the local host on Linux
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // shared address space (carrier-grade NAT, tailnets)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, cloud metadata services
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.88.99.0/24",  // 6to4 relay anycast
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and 255.255.255.255 broadcast
		// IPv6
		"::/96",           // unspecified, loopback, deprecated IPv4-compatible
		"::ffff:0:0/96",   // IPv4-mapped (checked unmapped as well)
		"::ffff:0:0:0/96", // IPv4-translated
		"64:ff9b:1::/48",  // local-use IPv4/IPv6 translation
		"100::/64",        // discard-only
		"2001::/32",       // Teredo, which tunnels to an embedded IPv4 address
		"2001:db8::/32",   // documentation
		"fc00::/7",        // unique local
		"fe80::/10",       // link-local
		"fec0::/10",       // site-local (deprecated)
		"ff00::/8",        // multicast
	} {
		prefixes = append(prefixes, netip.MustParsePrefix(s))
	}
	return prefixes
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// public reports whether ip is an ordinary public unicast address. IPv6
// forms that embed an IPv4 address (mapped, NAT64, 6to4) are judged by the
// IPv4 address they reach.
func public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.Zone() != "" {
		return false
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return public(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(ip):
			return public(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
