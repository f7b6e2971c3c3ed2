package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/warden-run/warden/tool"
)

// Discovery describes the server to clients that have not connected: the
// MCP Server Card at the streamable-HTTP URL's /server-card, and the AI
// Catalog at /.well-known/ai-catalog.json that points at it. It follows
// the Server Card draft of SEP-2127 as the experimental-ext-server-card
// repository publishes it (RATIONALE.md, "Discovery"): identity and
// connection details only. It lists no tools, resources or prompts (the
// draft leaves them to the protocol's list operations), so nothing a
// token's scopes or tools.hide keep from a caller is on it.
type Discovery struct {
	// Name is the server's reverse-DNS name (io.github.acme/warden).
	Name, Title, Description, Version string
	WebsiteURL                        string
	Icons                             []tool.Icon
	// URL is the streamable-HTTP URL clients reach the server at
	// (https://warden.example.com/mcp); "" names no remote: a URL built
	// from a request's Host header would let any client choose what a
	// shared cache serves to the others. The AI Catalog needs it.
	URL string
	// Auth says that a bearer token is required, so that the card names
	// the Authorization header a client must send.
	Auth bool
}

// Paths and media types of discovery.
const (
	PathServerCard      = PathMCP + "/server-card"
	PathAICatalog       = "/.well-known/ai-catalog.json"
	MediaTypeServerCard = "application/mcp-server-card+json"
	MediaTypeAICatalog  = "application/ai-catalog+json"
	ServerCardSchemaURL = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
	sessionProtocol     = "2025-11-25"
)

// serverCard is the card's JSON (SEP-2127 draft, ServerCard).
type serverCard struct {
	Schema      string       `json:"$schema"`
	Name        string       `json:"name"`
	Version     string       `json:"version"`
	Description string       `json:"description"`
	Title       string       `json:"title,omitempty"`
	WebsiteURL  string       `json:"websiteUrl,omitempty"`
	Icons       []cardIcon   `json:"icons,omitempty"`
	Remotes     []cardRemote `json:"remotes,omitempty"`
}

type cardIcon struct {
	Src      string   `json:"src"`
	MimeType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

type cardRemote struct {
	Type                      string       `json:"type"`
	URL                       string       `json:"url"`
	Headers                   []cardHeader `json:"headers,omitempty"`
	SupportedProtocolVersions []string     `json:"supportedProtocolVersions,omitempty"`
}

type cardHeader struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
}

// card builds the Server Card's bytes.
func (d *Discovery) card() []byte {
	c := serverCard{Schema: ServerCardSchemaURL, Name: d.Name, Version: d.Version, Description: d.Description,
		Title: d.Title, WebsiteURL: d.WebsiteURL}
	for _, i := range d.Icons {
		c.Icons = append(c.Icons, cardIcon{Src: i.Src, MimeType: i.MimeType, Sizes: i.Sizes, Theme: i.Theme})
	}
	if d.URL != "" {
		r := cardRemote{Type: "streamable-http", URL: d.URL, SupportedProtocolVersions: []string{sessionProtocol, firstStatelessVersion}}
		if d.Auth {
			r.Headers = []cardHeader{{Name: "Authorization", Description: "Bearer token (an OAuth access token where the server is an OAuth resource server)",
				IsRequired: true, IsSecret: true}}
		}
		c.Remotes = []cardRemote{r}
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	return append(b, '\n')
}

// cardURL is where the AI Catalog says the card is: URL's /server-card,
// which is PathServerCard only when URL is of PathMCP (a proxy may put a
// prefix before it); "" when it is not, so that no catalog names a
// document this server does not serve (config refuses such a URL).
func (d *Discovery) cardURL() string {
	base := strings.TrimSuffix(d.URL, "/")
	u, err := url.Parse(base)
	if d.URL == "" || err != nil || !strings.HasSuffix(u.Path, PathMCP) {
		return ""
	}
	return base + strings.TrimPrefix(PathServerCard, PathMCP)
}

// catalog builds the AI Catalog's bytes, nil without a URL (or one the
// card is not served under).
func (d *Discovery) catalog() []byte {
	card := d.cardURL()
	if card == "" {
		return nil
	}
	u, err := url.Parse(d.URL)
	if err != nil {
		return nil
	}
	_, server, _ := strings.Cut(d.Name, "/")
	type entry struct {
		Identifier string `json:"identifier"`
		Type       string `json:"type"`
		URL        string `json:"url"`
	}
	doc := struct {
		SpecVersion string  `json:"specVersion"`
		Entries     []entry `json:"entries"`
	}{SpecVersion: "1.0", Entries: []entry{{
		Identifier: "urn:air:" + u.Hostname() + ":mcp:" + server,
		Type:       MediaTypeServerCard,
		URL:        card,
	}}}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return append(b, '\n')
}

// mountDiscovery serves d's card and catalog on mux, without
// authentication: they say what the server is and where, nothing a
// caller's rights decide.
func mountDiscovery(mux *routes, d *Discovery) {
	mux.Handle(PathServerCard, staticDocument(d.card(), MediaTypeServerCard))
	if cat := d.catalog(); cat != nil {
		mux.Handle(PathAICatalog, staticDocument(cat, MediaTypeAICatalog))
	}
}

// staticDocument serves body as the draft asks of a hosted card: GET and
// HEAD, the media type, CORS for browser clients (the document is public
// and read-only), an hour's caching and an ETag honoured by If-None-Match.
func staticDocument(body []byte, mediaType string) http.Handler {
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET")
		h.Set("Access-Control-Allow-Headers", "Content-Type, If-None-Match")
		h.Set("Access-Control-Expose-Headers", "ETag")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed: this document is read with GET", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Cache-Control", "public, max-age=3600")
		h.Set("ETag", etag)
		h.Set("X-Content-Type-Options", "nosniff")
		for _, v := range strings.Split(r.Header.Get("If-None-Match"), ",") {
			if v = strings.TrimSpace(v); v == etag || v == "*" {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		h.Set("Content-Type", mediaType)
		if r.Method == http.MethodHead {
			return
		}
		w.Write(body)
	})
}
