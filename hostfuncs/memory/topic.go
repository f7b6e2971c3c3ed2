package memory

import (
	"strings"

	"github.com/warden-run/warden/internal/capsyntax"
)

// Topic limits (capsyntax, where config checks grants' topics with the
// same grammar).
const (
	// MaxTopicBytes bounds a whole topic.
	MaxTopicBytes = capsyntax.MaxTopicBytes
	// MaxTopicDepth bounds the number of '/'-separated components.
	MaxTopicDepth = capsyntax.MaxTopicDepth
	// maxComponentBytes bounds one component.
	maxComponentBytes = capsyntax.MaxTopicComponentBytes
)

// ValidateTopic reports why topic cannot name a memory, or nil when it can
// (capsyntax.ValidateTopic documents the grammar).
func ValidateTopic(topic string) error { return capsyntax.ValidateTopic(topic) }

func validateComponent(comp string) error { return capsyntax.ValidateTopicComponent(comp) }

func topicByte(c byte) bool { return capsyntax.TopicByte(c) }

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
