// Package rulesdata embeds the default agent manifests.
package rulesdata

import "embed"

// FS holds the default manifests, one NAME.toml per agent.
//
//go:embed *.toml
var FS embed.FS
