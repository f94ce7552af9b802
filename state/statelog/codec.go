package statelog

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// batchMarker starts every batch head, so a reader can find the next
// batch after damage.
var batchMarker = [4]byte{0xA7, 'B', 'A', 'T'}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// checkHead checks a batch head and returns its payload length.
func checkHead(h []byte) (int64, bool) {
	if !bytes.Equal(h[:4], batchMarker[:]) || crc32.Checksum(h[:12], crcTable) != binary.LittleEndian.Uint32(h[12:16]) {
		return 0, false
	}
	n := int64(binary.LittleEndian.Uint32(h[4:8]))
	return n, n > 0 && n <= maxRead
}

func crcOK(p []byte, n int) bool {
	return n >= crcSize && n <= len(p) && crc32.Checksum(p[:n-crcSize], crcTable) == binary.LittleEndian.Uint32(p[n-crcSize:n])
}

func countRecords(p []byte) int {
	n := 0
	for len(p) > 0 {
		_, _, k, ok := decodeRecord(p, false)
		if !ok {
			break
		}
		p = p[k:]
		n++
	}
	return n
}

// putHead fills in a batch head for payload.
func putHead(h []byte, payload []byte) {
	copy(h[:4], batchMarker[:])
	binary.LittleEndian.PutUint32(h[4:8], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[8:12], crc32.Checksum(payload, crcTable))
	binary.LittleEndian.PutUint32(h[12:16], crc32.Checksum(h[:12], crcTable))
}

func header() []byte {
	h := make([]byte, headerSize)
	copy(h, magic)
	binary.LittleEndian.PutUint32(h[8:12], FormatVersion)
	return h
}

func recordSize(key string, value []byte) int {
	n := uvarintLen(uint64(len(key))) + len(key) + crcSize
	if value == nil {
		return n + 1
	}
	return n + uvarintLen(uint64(len(value))+1) + len(value)
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// encodeRecord appends a record: uvarint key length, key, uvarint value
// length + 1 (0 for a deletion), value, and the CRC-32C of all of it.
func encodeRecord(dst []byte, r Record) []byte {
	start := len(dst)
	dst = binary.AppendUvarint(dst, uint64(len(r.Key)))
	dst = append(dst, r.Key...)
	if r.Value == nil {
		dst = binary.AppendUvarint(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(len(r.Value))+1)
		dst = append(dst, r.Value...)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// decodeRecord reads one record (with its checksum, checked when check is
// set); val is nil for a deletion (and non-nil, possibly empty, otherwise).
// n is the record's length whenever its lengths fit in p, even when ok is
// false because the checksum does not hold; n is 0 when they do not.
func decodeRecord(p []byte, check bool) (key string, val []byte, n int, ok bool) {
	kl, a := binary.Uvarint(p)
	if a <= 0 || kl > uint64(len(p)-a) {
		return "", nil, 0, false
	}
	k := p[a : a+int(kl)]
	n = a + int(kl)
	vl, b := binary.Uvarint(p[n:])
	if b <= 0 {
		return "", nil, 0, false
	}
	n += b
	if vl > 0 {
		if vl-1 > uint64(len(p)-n) {
			return "", nil, 0, false
		}
		val = p[n : n+int(vl-1) : n+int(vl-1)] // non-nil, possibly empty
		n += int(vl - 1)
	}
	if len(p)-n < crcSize {
		return "", nil, 0, false
	}
	n += crcSize
	if check && !crcOK(p, n) {
		return "", nil, n, false
	}
	return string(k), val, n, true
}
