package ampservertest

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// How the stand-in writes its answers. The tests that sync hundreds of
// times spend more on the stand-in answering than on the client under
// test, so what a thread's answers are made of is made once: each
// message's JSON is encoded once and kept (encodedMessages), the answers
// that carry messages are put together from those bytes (the same bytes
// json.Marshal gives: keys sorted, HTML escaped), and gzip writers are
// reused.

// acceptsGzip reports whether the request's Accept-Encoding names gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if name, _, _ := strings.Cut(strings.TrimSpace(part), ";"); strings.EqualFold(name, "gzip") {
			return true
		}
	}
	return false
}

// encoding is the Content-Encoding the stand-in answers r with: "zstd",
// "gzip" or "" (none).
func (s *Server) encoding(r *http.Request) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.zstd && strings.Contains(r.Header.Get("Accept-Encoding"), "zstd"):
		return "zstd"
	case !s.noGzip && acceptsGzip(r):
		return "gzip"
	}
	return ""
}

func (s *Server) write(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	switch enc := s.encoding(r); enc {
	case "zstd":
		body = zstdEncoder().EncodeAll(body, nil)
		w.Header().Set("Content-Encoding", enc)
	case "gzip":
		body = gzipMember(body)
		w.Header().Set("Content-Encoding", enc)
	}
	w.WriteHeader(status)
	n, _ := w.Write(body)
	s.count(n)
}

func (s *Server) count(n int) {
	s.mu.Lock()
	s.bytes += int64(n)
	s.mu.Unlock()
}

// zstdEncoder is the answers' zstd encoder (EncodeAll may be called
// concurrently).
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	zw, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	return zw
})

// gzipMember is b gzip-compressed (one gzip member).
func gzipMember(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	gzipWriters.Put(zw)
	return buf.Bytes()
}

// gzipWriters are the answers' gzip writers, reused: a new writer
// allocates and clears its hash tables (hundreds of kilobytes), which cost
// the suite more than compressing the answers did.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// bombBody is a gzip body of a valid envelope with 1 GiB of spaces inside
// (about 1 MB on the wire): gzip members, the spaces one compressed once
// and repeated, which a gzip reader reads as one stream.
var bombBody = sync.OnceValue(func() []byte {
	member := func(b []byte) []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(b)
		_ = zw.Close()
		return buf.Bytes()
	}
	spaces := member(bytes.Repeat([]byte(" "), 16<<20))
	out := member([]byte(`{"ok":true,"result":{"messages":[`))
	for range 64 {
		out = append(out, spaces...)
	}
	return append(out, member([]byte(`],"nextMessageIndex":null}}`))...)
})

func (s *Server) writeBomb(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Encoding", "gzip")
	w.WriteHeader(http.StatusOK)
	n, _ := w.Write(bombBody())
	s.count(n)
}

// Oversize's padding: a valid envelope's last string is paddingChunks
// times paddingChunk bytes of "x", far past any sane limit (the client's
// default is 64 MiB).
const (
	paddingChunk  = 1 << 20
	paddingChunks = 80
)

// paddingBytes is one chunk of padding, paddingGzip and paddingZstd the
// same gzip- and zstd-compressed: a gzip member and a zstd frame, which
// their readers read on from one to the next as from one stream.
var (
	paddingBytes = sync.OnceValue(func() []byte { return bytes.Repeat([]byte("x"), paddingChunk) })
	paddingGzip  = sync.OnceValue(func() []byte { return gzipMember(paddingBytes()) })
	paddingZstd  = sync.OnceValue(func() []byte { return zstdEncoder().EncodeAll(paddingBytes(), nil) })
)

// writePadded answers body, a JSON object, with a padding field added
// last. The answer is written chunk by chunk, the padding compressed
// once: the same bytes once inflated, without 80 MB to build and
// compress for every answer.
func (s *Server) writePadded(w http.ResponseWriter, r *http.Request, body []byte) {
	head := append(body[:len(body)-1:len(body)-1], `,"padding":"`...)
	tail := []byte(`"}`)
	chunk := paddingBytes()
	switch enc := s.encoding(r); enc {
	case "zstd":
		head, chunk, tail = zstdEncoder().EncodeAll(head, nil), paddingZstd(), zstdEncoder().EncodeAll(tail, nil)
		w.Header().Set("Content-Encoding", enc)
	case "gzip":
		head, chunk, tail = gzipMember(head), paddingGzip(), gzipMember(tail)
		w.Header().Set("Content-Encoding", enc)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	n, _ := w.Write(head)
	for range paddingChunks {
		m, _ := w.Write(chunk)
		n += m
	}
	m, _ := w.Write(tail)
	s.count(n + m)
}

// encodedMessages returns the JSON of the thread's messages [from, to), as
// json.Marshal writes each (compacted, HTML escaped), encoding those not
// encoded yet. A thread's messages are only ever appended to, so what is
// kept stays right. Callers hold s.mu.
func (t *Thread) encodedMessages(from, to int) [][]byte {
	for len(t.encoded) < to {
		b, err := json.Marshal(t.messages[len(t.encoded)])
		if err != nil {
			panic(err) // Put took the messages from a valid document
		}
		t.encoded = append(t.encoded, b)
	}
	return t.encoded[from:to]
}

// jsonArray is the JSON array of elements already encoded.
func jsonArray(elems [][]byte) []byte {
	n := 2
	for _, e := range elems {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, ']')
}

// jsonObject is the JSON object of fields whose values are already
// encoded, its keys sorted as json.Marshal sorts a map's.
func jsonObject(fields map[string][]byte) []byte {
	keys := slices.Sorted(maps.Keys(fields))
	n := 2
	for k, v := range fields {
		n += len(k) + len(v) + 4
	}
	b := bytes.NewBuffer(make([]byte, 0, n))
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(fields[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// okBody is the envelope of a successful answer whose result is already
// encoded.
func okBody(result []byte) []byte {
	return jsonObject(map[string][]byte{"ok": []byte("true"), "result": result})
}

// marshal is json.Marshal of a value that always encodes.
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
