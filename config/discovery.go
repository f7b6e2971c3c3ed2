package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/warden-run/warden/tool"
)

// Icon is one server.icons entry: an MCP icon (as a tool descriptor's
// icons), shown by clients beside the server's name.
type Icon struct {
	// Src is an https:// URL or a data:image/...;base64, URI.
	Src string `mapstructure:"src"`
	// MimeType is the image's type: image/png, image/jpeg, image/svg+xml
	// or image/webp.
	MimeType string `mapstructure:"mime_type"`
	// Sizes are "WxH" (e.g. 48x48) or "any".
	Sizes []string `mapstructure:"sizes"`
	// Theme is "light" or "dark": the background the icon is drawn for.
	Theme string `mapstructure:"theme"`
}

// Bounds of server.icons, those of a tool's icons (tool.Descriptor).
const (
	maxIcons        = 16
	maxIconSrcBytes = 64 << 10
)

var iconTypes = []string{"image/png", "image/jpeg", "image/svg+xml", "image/webp"}

var iconSize = regexp.MustCompile(`^(any|[1-9][0-9]{0,4}x[1-9][0-9]{0,4})$`)

// ServerIcons returns server.icons as MCP icons.
func (c *Config) ServerIcons() []tool.Icon {
	var out []tool.Icon
	for _, i := range c.Server.Icons {
		out = append(out, tool.Icon{Src: i.Src, MimeType: i.MimeType, Sizes: i.Sizes, Theme: i.Theme})
	}
	return out
}

func (c *Config) validateIcons(fail func(key, format string, args ...any)) {
	if n := len(c.Server.Icons); n > maxIcons {
		fail("server.icons", "lists %d icons, the bound is %d", n, maxIcons)
	}
	for i, icon := range c.Server.Icons {
		key := fmt.Sprintf("server.icons[%d]", i)
		if err := CheckIcon(icon); err != nil {
			fail(key, "%v", err)
		}
	}
}

// CheckIcon reports whether icon is one a client may be sent: an https://
// URL or a base64 data: URI of an image type clients draw, within 64 KiB,
// printable, with WxH or "any" sizes and a light or dark theme. A scheme
// such as javascript: or http: is refused: a client may fetch or render
// the source as it is.
func CheckIcon(icon Icon) error {
	src := icon.Src
	switch {
	case src == "":
		return fmt.Errorf("src: missing")
	case len(src) > maxIconSrcBytes:
		return fmt.Errorf("src: %d bytes, over the limit of %d", len(src), maxIconSrcBytes)
	}
	if !utf8.ValidString(src) {
		return fmt.Errorf("src: not UTF-8")
	}
	for _, r := range src {
		if r == ' ' || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("src: holds the space, control or invisible character %U", r)
		}
	}
	mime := icon.MimeType
	if rest, ok := strings.CutPrefix(src, "data:"); ok {
		typ, _, found := strings.Cut(rest, ";base64,")
		if !found || !slices.Contains(iconTypes, typ) {
			return fmt.Errorf("src: a data: URI must be data:<%s>;base64,...", strings.Join(iconTypes, "|"))
		}
		if mime != "" && mime != typ {
			return fmt.Errorf("mime_type %q is not the data: URI's type %q", mime, typ)
		}
	} else {
		u, err := url.Parse(src)
		if err != nil || !strings.HasPrefix(src, "https://") || u.Host == "" || u.User != nil {
			return fmt.Errorf("src: %q is not an https:// URL (nor a data: URI)", src)
		}
	}
	if mime != "" && !slices.Contains(iconTypes, mime) {
		return fmt.Errorf("mime_type: %q is not one of %s", mime, strings.Join(iconTypes, ", "))
	}
	for _, s := range icon.Sizes {
		if !iconSize.MatchString(s) {
			return fmt.Errorf("sizes: %q is not WxH (e.g. 48x48) or any", s)
		}
	}
	if t := icon.Theme; t != "" && t != "light" && t != "dark" {
		return fmt.Errorf("theme: %q is not light or dark", t)
	}
	return nil
}

// Discovery configures the MCP Server Card (`<streamable-http-url>/server-card`)
// and the AI Catalog (/.well-known/ai-catalog.json) of `warden serve
// --http` (docs/deploy.md, "Discovery"). Off by default. Read at start.
type Discovery struct {
	Enabled bool `mapstructure:"enabled"`
	// Name is the server's name in reverse-DNS form, as the MCP registry
	// takes it (io.github.acme/warden).
	Name        string `mapstructure:"name"`
	Title       string `mapstructure:"title"`
	Description string `mapstructure:"description"`
	WebsiteURL  string `mapstructure:"website_url"`
	// URL is the streamable-HTTP URL clients reach the server at; empty
	// means server.oauth.resource, and without it the card names none.
	URL string `mapstructure:"url"`
}

var registryName = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)

// DiscoveryURL is the server's streamable-HTTP URL as the card names it:
// server.discovery.url, else server.oauth.resource, else "".
func (c *Config) DiscoveryURL() string {
	if u := c.Server.Discovery.URL; u != "" {
		return u
	}
	return c.Server.OAuth.Resource
}

func (c *Config) validateDiscovery(fail func(key, format string, args ...any)) {
	d := c.Server.Discovery
	if n := len(d.Name); !registryName.MatchString(d.Name) || n < 3 || n > 200 {
		fail("server.discovery.name", "%s is not a server name in reverse-DNS form, namespace/name (e.g. io.github.acme/warden; 3 to 200 of A-Z a-z 0-9 . - and _ after the slash)", showValue(d.Name))
	}
	for _, f := range []struct{ key, text string }{{"server.discovery.title", d.Title}, {"server.discovery.description", d.Description}} {
		key, text := f.key, f.text
		if n := utf8.RuneCountInString(text); n < 1 || n > 100 {
			fail(key, "must be 1 to 100 characters, got %d", n)
		} else if err := CheckAccessName(text); err != nil {
			fail(key, "%v", err)
		}
	}
	if d.WebsiteURL != "" {
		if err := checkHTTPSURL(d.WebsiteURL, true); err != nil {
			fail("server.discovery.website_url", "%v", err)
		}
	}
	if d.URL != "" {
		if err := CheckResourceURL(d.URL); err != nil {
			fail("server.discovery.url", "%v", err)
			return
		}
	}
	// The AI Catalog names the card at the URL's /server-card; warden
	// serves it at its streamable-HTTP path's, /mcp/server-card. The two
	// agree only when the URL is of that path (a proxy may put a prefix
	// before it).
	if u := c.DiscoveryURL(); d.Enabled && u != "" && !strings.HasSuffix(strings.TrimSuffix(u, "/"), streamablePath) {
		key := "server.discovery.url"
		if d.URL == "" {
			key = "server.oauth.resource"
		}
		fail(key, "%q does not end in %s, warden's streamable-HTTP path: the AI Catalog would point clients at %s/server-card, "+
			"and warden serves the Server Card at %s/server-card; set server.discovery.url to the URL clients reach %s at",
			u, streamablePath, strings.TrimSuffix(u, "/"), streamablePath, streamablePath)
	}
}

// streamablePath is the path warden serves MCP at (mcpserver.PathMCP).
const streamablePath = "/mcp"
