package thread

// Identities of the things a thread counts (docs/counting.md, rule 1):
// a message is identified by its messageId, a ledger event by its id, a tool
// result by its toolUseID, an exchange by the prompt that opened it. The
// collector pins each item's labels when it is first counted, so an item
// whose labels change on a rewrite (a stop reason that turns into
// `cancelled`, a model filled in late) still counts once.

// ItemKind says what an item is. It is part of the item's key.
type ItemKind uint8

// Item kinds. A message without a numeric messageId is identified by the
// hash of its string id (server exports), else by its position in
// messages[]; a ledger event without an id by its position in the ledger.
// A tool result stands for its toolUseID: in a message with a numeric
// messageId, by its place (the message and the result's rank in it: the
// same result, stable while its tool_use is rewritten or even lost, and a
// far smaller key to keep); else by the id's hash.
const (
	ItemMessage         ItemKind = 1
	ItemMessageStringID ItemKind = 2
	ItemMessageAt       ItemKind = 3
	ItemLedger          ItemKind = 4
	ItemLedgerAt        ItemKind = 5
	ItemTool            ItemKind = 6
	ItemExchange        ItemKind = 7
	ItemToolAt          ItemKind = 8
)

const (
	kindShift = 60
	idMask    = 1<<kindShift - 1
)

// ItemKey makes the key of an item: its kind and the low 60 bits of its id.
func ItemKey(kind ItemKind, id uint64) uint64 {
	return uint64(kind)<<kindShift | id&idMask
}

// KeyKind returns the kind of an item key.
func KeyKind(key uint64) ItemKind { return ItemKind(key >> kindShift) }

// IsMessageKind reports whether items of kind k are messages.
func IsMessageKind(k ItemKind) bool {
	return k == ItemMessage || k == ItemMessageStringID || k == ItemMessageAt
}

// Kind returns the kind of an item.
func (it *Item) Kind() ItemKind { return ItemKind(it.Key >> kindShift) }

// IsMessage reports whether the item is a user or assistant message.
func (it *Item) IsMessage() bool {
	k := it.Kind()
	return k == ItemMessage || k == ItemMessageStringID || k == ItemMessageAt
}

// IsTool reports whether the item is a tool result.
func (it *Item) IsTool() bool {
	k := it.Kind()
	return k == ItemTool || k == ItemToolAt
}

// IsLedger reports whether the item is a usageLedger event.
func (it *Item) IsLedger() bool {
	k := it.Kind()
	return k == ItemLedger || k == ItemLedgerAt
}

// Item is one counted thing of a thread: its identity, the labels it carries
// in this snapshot (raw, before the label cap), and its values. Summarize
// lists every item of the thread, the ones a fork copied from its parent
// too (Copied), so that the store can remember them as the parent's
// even when a later rewrite loses the fork point.
type Item struct {
	// Key identifies the item within its thread, across rewrites and
	// restarts (ItemKey).
	Key uint64
	// Alias is the key the item had before its message got a protocol id
	// ("M-…"), 0 when it has no other: a thread imported into the
	// server's thread store, or pins saved before protocol ids were read,
	// know it by that key (the store's rule for it is in pins.go).
	Alias uint64
	// AliasFromZero is the alias under a numbering one lower (the
	// message's numeric messageId less one): a thread known by the 0-based
	// ids of a local-era document (0, 1, 2, …) that is served after its
	// import with the CLI's numbering (index + 1). 0 when there is none.
	// The store takes, per thread, the numbering that matches.
	AliasFromZero uint64
	// Copied is set on the items a fork copied from its parent: the
	// parent's spending, not counted here.
	Copied bool
	// Role and Prompt of a message item.
	Role   Role
	Prompt bool

	// Model names the model of a message or ledger event, "" when nothing
	// does. On the result of an edit tool call (Lines), or of a shell call
	// that committed or opened a pull request, it is the model of the
	// assistant message that made the call, for the lines, commits and
	// pull requests by model; "" on other tool results.
	Model string
	// StopReason is a finished assistant message's stop_reason
	// (FinishReason), "" while it is still moving.
	StopReason string
	// NoUsage is set on an assistant message that carries no usage block.
	NoUsage bool
	// Tool and Status of a tool result: the normalized tool name and the
	// terminal status.
	Tool   string
	Status string
	// Added and Removed are the lines an edit tool call's input changes
	// (edit.go), when Lines. They count only for a call whose run is done
	// (one that failed, was cancelled or rejected changed nothing): the
	// store counts them under the status the item was first counted with,
	// so that a rewrite never takes them back.
	Added, Removed int64
	Lines          bool
	// Uncounted is why an edit tool call's lines are not counted
	// (ToolUse.Uncounted), "" when they are or it is no edit.
	Uncounted string
	// Shell is how a shell command (Bash, shell_command) ended: one of the
	// Shell… outcomes, "" for other tools and rejected commands.
	Shell string
	// Commits, PullRequests, Pushes and FailedPushes are what a shell
	// command whose run is done did (parser/shellcmd): new commits, pull
	// requests opened, pushes that reached the remote and pushes that did
	// not. Like Added and Removed they count only under the status the
	// item was first counted with.
	Commits, PullRequests, Pushes, FailedPushes int32

	// Tokens billed to the item (assistant messages of a thread billed by
	// its messages, ledger events of one billed by its ledger), and their
	// part beyond LongContextThreshold.
	Tokens     Tokens
	Over       Tokens
	Credits    float64
	HasCredits bool
	// Speed is the speed an assistant message's tokens were asked to run
	// at (Usage.Speed); standard for every other item, ledger events
	// included (they name none).
	Speed Speed
	// Ratio is a finished assistant message's context-window utilization.
	Ratio    float64
	HasRatio bool
	// Seconds is an exchange's duration.
	Seconds float64
	// At is when the item happened, epoch ms, for history (backfill, the
	// usage report): its own time (the message's createdAt, which the Amp
	// server sets, else its usage block's timestamp, else its sentAt; a
	// ledger event's timestamp; an exchange's end), else the nearest
	// earlier one in the thread, else the thread's created; 0 when there
	// is none of these.
	At int64
}

// hashID hashes an id string (FNV-1a, 64 bits). Unlike a seeded hash it is
// the same in every process, so keys made from it can be persisted.
func hashID(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// HashID is hashID for a string.
func HashID(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// toolKey is the identity of the j-th tool result of message m, whose
// toolUseID hashes to h, and the identity it had before its message got a
// protocol id (0: the same). A message keyed by a protocol id is not keyed by
// place: its numeric messageId is an index that another message takes
// after an edit.
func toolKey(m *Message, j int, h uint64) (key, alias uint64) {
	key = ItemKey(ItemTool, h)
	if m.HasID && m.ID >= 0 && m.ID < 1<<50 && j < 64 {
		at := ItemKey(ItemToolAt, uint64(m.ID)<<6|uint64(j))
		if m.protocolID() == 0 {
			return at, 0
		}
		return key, at
	}
	return key, 0
}

// protocolID is the hash of a message's protocol id ("M-…"): its
// protocolMessageID, else its messageId when that is an "M-" string; 0
// when it has none.
func (m *Message) protocolID() uint64 {
	if m.ProtoHash != 0 {
		return m.ProtoHash
	}
	if m.IDIsProtocol {
		return m.IDHash
	}
	return 0
}

// messageKey is a message's identity: its protocol id, else its numeric
// messageId, else the hash of its string id, else its position in
// messages[].
func messageKey(m *Message) uint64 {
	if p := m.protocolID(); p != 0 {
		return ItemKey(ItemMessageStringID, p)
	}
	return plainMessageKey(m)
}

// plainMessageKey is the identity a message has without a protocol id.
func plainMessageKey(m *Message) uint64 {
	switch {
	case m.HasID:
		return ItemKey(ItemMessage, uint64(m.ID))
	case m.IDHash != 0 && !m.IDIsProtocol:
		return ItemKey(ItemMessageStringID, m.IDHash)
	}
	return ItemKey(ItemMessageAt, uint64(m.Index))
}

// messageAlias is the identity a message keyed by its protocol id had
// before it got one (its numeric messageId, else its position: how a
// thread imported into the server's thread store, or a state saved by an
// exporter that did not read protocol ids, knows it), 0 for a message
// keyed without one. The store lets a message take over the pin of its
// alias when the alias is not in the snapshot under its own name.
func messageAlias(m *Message) uint64 {
	if m.protocolID() == 0 {
		return 0
	}
	if a := plainMessageKey(m); a != messageKey(m) {
		return a
	}
	return 0
}

// messageAliasFromZero is messageAlias under a numbering one lower (see
// Item.AliasFromZero), 0 when the message has no numeric messageId above
// 0 or no protocol id.
func messageAliasFromZero(m *Message) uint64 {
	if m.protocolID() == 0 || !m.HasID || m.ID < 1 {
		return 0
	}
	return ItemKey(ItemMessage, uint64(m.ID-1))
}

// toolAliasFromZero is a tool result's alias under a numbering one lower.
func toolAliasFromZero(m *Message, j int) uint64 {
	if m.protocolID() == 0 || !m.HasID || m.ID < 1 || m.ID >= 1<<50 || j >= 64 {
		return 0
	}
	return ItemKey(ItemToolAt, uint64(m.ID-1)<<6|uint64(j))
}
