// Command bbolt-compare measures go.etcd.io/bbolt on the state log's workload
// (one record per thread, 30,000 threads, one thread rewritten per save),
// for the comparison in docs/performance.md (the counting state at scale). It is a module
// of its own so that the exporter does not depend on bbolt:
//
//	cd scripts/bbolt-compare && go run . 30000
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

func writeBytes() int64 {
	b, _ := os.ReadFile("/proc/self/io")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "write_bytes:") {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(l, "write_bytes:")), 10, 64)
			return n
		}
	}
	return 0
}

func hwm() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM") || strings.HasPrefix(l, "VmRSS") {
			fmt.Print(l, "  ")
		}
	}
	return ""
}

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	dir, _ := os.MkdirTemp("", "bolt")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		panic(err)
	}
	val := bytes.Repeat([]byte("x"), 1000) // a thread record is ~0.9 kB
	fval := bytes.Repeat([]byte("f"), 110)
	t0 := time.Now()
	if err := db.Update(func(tx *bolt.Tx) error {
		tb, _ := tx.CreateBucketIfNotExists([]byte("t"))
		fb, _ := tx.CreateBucketIfNotExists([]byte("f"))
		for i := range n {
			k := fmt.Sprintf("T-019c%08d-7517-74aa-a61f-2315b693bbe1", i*7919%n)
			tb.Put([]byte(k), val)
			fb.Put([]byte("/home/user/.local/share/amp/threads/"+k+".json"), fval)
		}
		return nil
	}); err != nil {
		panic(err)
	}
	fmt.Printf("initial load of %d: %v\n", n, time.Since(t0))
	w0 := writeBytes()
	t0 = time.Now()
	const saves = 80
	for i := range saves {
		k := fmt.Sprintf("T-019c%08d-7517-74aa-a61f-2315b693bbe1", 4242)
		v := append([]byte{byte(i)}, val[1:]...)
		if err := db.Update(func(tx *bolt.Tx) error {
			if err := tx.Bucket([]byte("t")).Put([]byte(k), v); err != nil {
				return err
			}
			return tx.Bucket([]byte("f")).Put([]byte("/home/user/.local/share/amp/threads/"+k+".json"), fval)
		}); err != nil {
			panic(err)
		}
	}
	fmt.Printf("%d one-thread saves: %.1f kB written each, %v each\n", saves, float64(writeBytes()-w0)/saves/1e3, time.Since(t0)/saves)
	db.Close()
	st, _ := os.Stat(path)
	t0 = time.Now()
	db, _ = bolt.Open(path, 0o600, nil)
	var total int
	db.View(func(tx *bolt.Tx) error {
		for _, b := range []string{"t", "f"} {
			tx.Bucket([]byte(b)).ForEach(func(k, v []byte) error { total += len(v); return nil })
		}
		return nil
	})
	fmt.Printf("reopen and read all: %v, file %.1f MB; ", time.Since(t0), float64(st.Size())/1e6)
	hwm()
	fmt.Println()
}
