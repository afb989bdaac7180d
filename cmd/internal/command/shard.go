package command

import (
	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/pkg/session/store"
)

// ShardFlag is --shard I/N, shared by the commands that select sessions
// from the listing (wc-ls, wc-compact --all).
func ShardFlag() cli.Flag {
	return &cli.StringFlag{Name: "shard", Usage: "only the sessions of part `I/N` (1 <= I <= N): those whose 1 + (first 8 bytes of sha256(id), big endian) mod N is I"}
}

// Shard reads --shard; the zero Shard (every session) when it is not given.
func (c *Ctx) Shard() (store.Shard, error) {
	if !c.IsSet("shard") {
		return store.Shard{}, nil
	}
	s, err := store.ParseShard(c.String("shard"))
	if err != nil {
		return s, Usagef("--shard: %v", err)
	}
	return s, nil
}
