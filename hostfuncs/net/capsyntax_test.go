package net

import (
	"net/netip"

	"github.com/warden-run/warden/internal/capsyntax"
)

// The host grammar lives in internal/capsyntax, which config shares; the
// tests here name its parts as they did when they lived in this package.

func parseIPv4Loose(labels []string) (netip.Addr, bool) { return capsyntax.ParseIPv4Loose(labels) }

func numericLabel(label string) bool { return capsyntax.NumericLabel(label) }
