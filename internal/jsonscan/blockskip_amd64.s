#include "textflag.h"

// The AVX2 kernel behind skipBlocks (see blockskip.go for the contract).
//
// Each 64-byte block becomes 64-bit masks, one bit per byte: quotes,
// backslashes, openers and closers. The state carried from block to block is
// three registers, and a block is committed only once every stop test has
// passed, so a stop simply returns the registers as they are: the state at
// the start of the block that was declined.
//
// Registers:
//	SI  start of the current block
//	CX  bytes left after the current block (negative: no whole block left)
//	DX  depth at SI
//	R8  in-string at SI as a mask: 0 outside, -1 inside, so that XOR with it
//	    flips a block's quote parity into absolute in-string bits
//	R9  escaped at SI: 1 if b[SI] is escaped, else 0 (bit 0 of a mask)
//	R10 0xaaaaaaaaaaaaaaaa, ODD: the odd bit positions
//	Y8  '"' in every byte
//	Y9  '\\' in every byte
//	Y10 0x20 in every byte: ORed in, it folds '[' (0x5b) onto '{' (0x7b)
//	    and ']' (0x5d) onto '}' (0x7d), and no other byte onto either, so
//	    two compares find all four brackets
//	Y11 '{' in every byte
//	Y12 '}' in every byte
//	X14 all ones: the carry-less multiplier that computes a prefix XOR
//	AX, BX, DI, R11, R12, R13 and Y0-Y7 are scratch.
//
// R14 and X15 are left alone (the Go internal ABI's g and zero registers).

// func skipBlocksAVX2(b []byte, depth int, inString, escaped bool) (n, depthOut int, inStringOut, escapedOut bool)
TEXT ·skipBlocksAVX2(SB), NOSPLIT, $0-58
	MOVQ    b_base+0(FP), SI
	MOVQ    b_len+8(FP), CX
	MOVQ    depth+24(FP), DX
	MOVBQZX inString+32(FP), R8
	NEGQ    R8
	MOVBQZX escaped+33(FP), R9

	MOVL         $0x22, AX
	VMOVQ        AX, X8
	VPBROADCASTB X8, Y8
	MOVL         $0x5c, AX
	VMOVQ        AX, X9
	VPBROADCASTB X9, Y9
	MOVL         $0x20, AX
	VMOVQ        AX, X10
	VPBROADCASTB X10, Y10
	MOVL         $0x7b, AX
	VMOVQ        AX, X11
	VPBROADCASTB X11, Y11
	MOVL         $0x7d, AX
	VMOVQ        AX, X12
	VPBROADCASTB X12, Y12
	VPCMPEQB     X14, X14, X14
	MOVQ         $0xaaaaaaaaaaaaaaaa, R10

	SUBQ $64, CX
	JLT  done

loop:
	VMOVDQU  (SI), Y0
	VMOVDQU  32(SI), Y1
	VPCMPEQB Y8, Y0, Y2  // quotes, low half
	VPCMPEQB Y8, Y1, Y3  // quotes, high half
	VPCMPEQB Y9, Y1, Y5  // backslashes, high half

	// Fast path, the bulk of a long string: a block that starts inside a
	// string and has no quote at all stays inside it. Its brackets do not
	// count and the depth was checked against the limits on entry, so no
	// stop test can fire; all that changes is the escape. That is decided
	// by the run of backslashes ending at byte 63, if any: byte 64 is
	// escaped iff the run's length is odd. Unless the high half is all
	// backslashes, the run starts after its highest other byte, at bit h+1,
	// has length 31-h within the half, and cannot reach back to byte 0,
	// where the escape carried in would matter. Testing the vectors
	// directly spares this path extracting all but one mask.
	TESTQ     R8, R8
	JZ        general
	VPOR      Y2, Y3, Y6
	VPTEST    Y6, Y6
	JNZ       general
	VPMOVMSKB Y5, AX
	NOTL      AX
	BSRL      AX, AX     // AX = h, the highest byte of the high half that is not a backslash
	JZ        general    // none: the run may be longer than the half
	NOTL      AX
	ANDL      $1, AX     // (31 - h) & 1
	MOVQ      AX, R9
	ADDQ      $64, SI
	SUBQ      $64, CX
	JGE       loop
	JMP       done

general:
	VPCMPEQB  Y9, Y0, Y4 // backslashes, low half
	VPMOVMSKB Y2, AX
	VPMOVMSKB Y3, BX
	SHLQ      $32, BX
	ORQ       BX, AX     // AX = quotes
	VPMOVMSKB Y4, BX
	VPMOVMSKB Y5, DI
	SHLQ      $32, DI
	ORQ       DI, BX     // BX = backslashes

	// Escapes. A byte is escaped when it follows a run of backslashes of
	// odd length; within a run the backslashes alternate between escaping
	// (the 1st, 3rd, ...) and escaped. P is the backslashes that may start
	// or continue a run: all of them except an escaped byte 0 (R9 = 1),
	// which is a literal character and is itself escaped.
	//
	// Take X = (P << 1) | ODD and compute Z = (X - P) ^ ODD. Outside the
	// span [s, s+L] of a run at s of length L (the run and the byte after
	// it) P and P << 1 are zero, X - P leaves ODD, and Z is zero. Inside a
	// span, X is all ones over s+1..s+L and at s it has the ODD bit of s:
	//   s odd:  X is all ones over s..s+L; taking P away leaves only bit s+L.
	//   s even: X is ones over s+1..s+L, i.e. 2^(L+1)-2 relative to s, and
	//           X - P = 2^(L+1)-2 - (2^L-1) = 2^L-1: ones over s..s+L-1.
	// No borrow leaves a span (nor enters the next one: a span ends on a
	// byte that is not a backslash), so after the XOR with ODD, Z is set
	// over the run exactly at offsets 0, 2, 4, ... from s (the escaping
	// backslashes), and at s+L exactly when L is odd (the escaped byte).
	// A run reaching bit 63 just loses its span's last bit, which belongs
	// to the next block: that byte is escaped iff bit 63 is an escaping
	// backslash, Z & P at bit 63. Quotes are never in P, so a quote is
	// escaped iff its bit is set in Z | R9.
	//
	// Backslashes are treated as escapes everywhere, also outside strings,
	// which differs from the byte-wise rules; blocks where that could matter
	// are declined below.
	ANDNQ BX, R9, R13    // R13 = P = backslashes &^ escaped byte 0
	LEAQ  (R13)(R13*1), R11
	ORQ   R10, R11       // R11 = X = (P << 1) | ODD
	SUBQ  R13, R11
	XORQ  R10, R11       // R11 = Z
	ANDQ  R11, R13       // R13 = escaping backslashes
	SHRQ  $63, R13       // R13 = escaped at the next block's byte 0
	ORQ   R9, R11
	ANDNQ AX, R11, AX    // AX = unescaped quotes

	// Second fast path, most of the rest of a long string: a block that
	// starts inside a string and whose quotes are all escaped stays inside
	// it. Its brackets do not count and its backslashes are all inside the
	// string; only the escape carries over.
	TESTQ R8, R8
	JZ    structure
	TESTQ AX, AX
	JNZ   structure
	MOVQ  R13, R9
	ADDQ  $64, SI
	SUBQ  $64, CX
	JGE   loop
	JMP   done

structure:
	// The block starts outside strings or has an unescaped quote: find its
	// strings and count the brackets outside them.
	VPOR     Y10, Y0, Y0
	VPOR     Y10, Y1, Y1
	VPCMPEQB Y11, Y0, Y4 // openers, low half
	VPCMPEQB Y11, Y1, Y5 // openers, high half
	VPCMPEQB Y12, Y0, Y6 // closers, low half
	VPCMPEQB Y12, Y1, Y7 // closers, high half

	// Prefix XOR of the unescaped quotes: bit i is the number of quotes in
	// bytes 0..i, mod 2, i.e. whether byte i is inside a string (opening
	// quote included, closing quote excluded) relative to the state at
	// byte 0. A carry-less multiply by all ones computes exactly that sum.
	VMOVQ      AX, X3
	VPCLMULQDQ $0x00, X14, X3, X3
	VMOVQ      X3, R11
	XORQ       R8, R11   // R11 = in-string bits, absolute

	// A backslash outside strings: the escape mask above may have hidden a
	// quote that, byte by byte, opens a string (\" outside a string). The
	// masks are trustworthy up to the first such backslash, so when there is
	// none they are exact; when there is one, decline the block. Valid JSON
	// never has one.
	ANDNQ BX, R11, BX
	JNZ   done

	// Brackets outside strings. A bracket is never a quote, so its in-string
	// bit is the state it is read in.
	VPMOVMSKB Y4, R12
	VPMOVMSKB Y5, DI
	SHLQ      $32, DI
	ORQ       DI, R12
	ANDNQ     R12, R11, R12
	POPCNTQ   R12, R12   // R12 = openers outside strings
	VPMOVMSKB Y6, AX
	VPMOVMSKB Y7, BX
	SHLQ      $32, BX
	ORQ       BX, AX
	ANDNQ     AX, R11, AX
	POPCNTQ   AX, AX     // AX = closers outside strings

	// Might end: enough closers to bring the depth to zero somewhere in the
	// block, whatever the order of the brackets. At depth 0, a lone string
	// with an unescaped quote in this block, this always stops.
	CMPQ AX, DX
	JGE  done

	// Might pass the nesting limit, whatever the order.
	LEAQ (DX)(R12*1), DI
	CMPQ DI, $10000      // maxBlockDepth
	JGT  done

	// Commit the block.
	SUBQ AX, DI
	MOVQ DI, DX
	SARQ $63, R11        // in-string after byte 63, as a mask
	MOVQ R11, R8
	MOVQ R13, R9
	ADDQ $64, SI
	SUBQ $64, CX
	JGE  loop

done:
	// Reached from the loop test, or from a stop test with the state still
	// that of the declined block's start.
	SUBQ       b_base+0(FP), SI
	MOVQ       SI, n+40(FP)
	MOVQ       DX, depthOut+48(FP)
	ANDQ       $1, R8
	MOVB       R8, inStringOut+56(FP)
	MOVB       R9, escapedOut+57(FP)
	VZEROUPPER
	RET
