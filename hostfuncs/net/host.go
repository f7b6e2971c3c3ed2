package net

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// checkNumericHost refuses a host that reads as an IPv4 address in a form
// other than dotted decimal: "127.1", "2130706433", "0x7f.0.0.1",
// "0177.0.0.1". Browsers (the WHATWG URL standard) and C resolvers
// (inet_aton) read each as 127.0.0.1; Go's resolver reads none of them, and
// before this check they were DNS names here. A name that one layer takes
// for a loopback address and another for a public name is a policy matched
// on a spelling: "*" would cover it in a prompt while a resolver reached
// loopback. So such a host is refused in grants and URLs alike, naming the
// one spelling that is accepted. The rule is the WHATWG one: a host whose
// last label is a number (decimal, or hex after 0x) is an IPv4 address; no
// DNS top-level label is numeric. host is normalized (normalizeHost) and
// not an IP literal netip accepts.
func checkNumericHost(host string) error {
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if !numericLabel(last) {
		return nil
	}
	if addr, ok := parseIPv4Loose(labels); ok {
		return fmt.Errorf("host %q is the IPv4 address %s in another spelling; write it as %s", host, addr, addr)
	}
	return fmt.Errorf("host %q ends in a number but is not an IPv4 address; write an IPv4 address as four decimal numbers", host)
}

// numericLabel reports whether label is all decimal digits, or 0x followed
// by hex digits (WHATWG "ends in a number").
func numericLabel(label string) bool {
	if h, ok := strings.CutPrefix(strings.ToLower(label), "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return label != "" && strings.Trim(label, "0123456789") == ""
}

// parseIPv4Loose parses the labels of an IPv4 address as inet_aton does:
// one to four numbers, each decimal, octal (leading 0) or hex (0x), the
// last filling the remaining bytes.
func parseIPv4Loose(labels []string) (netip.Addr, bool) {
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	var ip uint64
	for i, label := range labels {
		base, digits := 10, label
		switch {
		case strings.HasPrefix(strings.ToLower(label), "0x"):
			base, digits = 16, label[2:]
			if digits == "" {
				digits = "0"
			}
		case len(label) > 1 && label[0] == '0':
			base, digits = 8, label[1:]
		}
		n, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		if i < len(labels)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			ip = ip<<8 | n
			continue
		}
		rest := 4 - i // bytes the last number fills
		if n>>(8*rest) != 0 {
			return netip.Addr{}, false
		}
		ip = ip<<(8*rest) | n
	}
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}
