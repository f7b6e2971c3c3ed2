package memory

import (
	"fmt"
	"strings"
)

// Topic limits. They keep a topic a short, portable relative path: every
// topic maps to exactly one file, <topic>.md, below the memories directory.
const (
	// MaxTopicBytes bounds a whole topic.
	MaxTopicBytes = 200
	// MaxTopicDepth bounds the number of '/'-separated components.
	MaxTopicDepth = 8
	// maxComponentBytes bounds one component, well under every filesystem's
	// name limit once ".md" and a temp-file prefix are added.
	maxComponentBytes = 64
)

// ValidateTopic reports why topic cannot name a memory, or nil when it can.
//
// A topic is 1 to MaxTopicDepth components separated by '/'. Each component
// is 1–64 bytes of A-Z a-z 0-9 '_' '-' '.', must not start with '.' (so no
// ".", "..", or hidden names, which also keeps the store's own temp files out
// of the topic namespace) and must not end in ".md" (so that a topic's
// directory never collides with another topic's file). Nothing else is
// accepted: no empty components, no leading or trailing '/', no backslash, no
// NUL, no non-ASCII.
func ValidateTopic(topic string) error {
	if topic == "" {
		return fmt.Errorf("topic is empty")
	}
	if len(topic) > MaxTopicBytes {
		return fmt.Errorf("topic is %d bytes, over the limit of %d", len(topic), MaxTopicBytes)
	}
	depth := 0
	for comp := range strings.SplitSeq(topic, "/") {
		depth++
		if depth > MaxTopicDepth {
			return fmt.Errorf("topic %q has more than %d components", topic, MaxTopicDepth)
		}
		if err := validateComponent(comp); err != nil {
			return fmt.Errorf("topic %q: %w", topic, err)
		}
	}
	return nil
}

func validateComponent(comp string) error {
	switch {
	case comp == "":
		return fmt.Errorf("empty component (leading, trailing or double '/')")
	case len(comp) > maxComponentBytes:
		return fmt.Errorf("component of %d bytes, over the limit of %d", len(comp), maxComponentBytes)
	case comp[0] == '.':
		return fmt.Errorf("component %q starts with '.'", comp)
	case strings.HasSuffix(strings.ToLower(comp), ".md"):
		return fmt.Errorf("component %q ends in .md", comp)
	}
	for i := 0; i < len(comp); i++ {
		if !topicByte(comp[i]) {
			return fmt.Errorf("byte %#x at offset %d is not one of A-Z a-z 0-9 _ - .", comp[i], i)
		}
	}
	return nil
}

func topicByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '.'
}

// within reports whether topic is prefix or lies below it. Prefixes match
// whole components: "arch" covers "arch" and "arch/db", never "archive".
func within(topic, prefix string) bool {
	return topic == prefix || strings.HasPrefix(topic, prefix) && topic[len(prefix)] == '/'
}

// fileName is the store-relative file of a valid topic.
func fileName(topic string) string { return topic + ".md" }

// TopicCovers reports whether the topic prefix grant covers the topic or
// prefix request: request is grant or lies below it, by whole components.
// A malformed grant covers nothing, as at run time; a malformed request is
// covered only by the identical string. It is the memory-topic half of
// "does grant set A cover request B" (internal/capset).
func TopicCovers(grant, request string) bool {
	if ValidateTopic(request) != nil {
		return grant == request
	}
	return ValidateTopic(grant) == nil && within(request, grant)
}
