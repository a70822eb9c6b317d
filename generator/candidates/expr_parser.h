// The expression language: users fuse their own chains without recompiling.
//
//   program   := stmt { (';' | newline) stmt }
//   stmt      := 'param' NAME '=' NUMBER          scalar parameter and its tuning value
//              | NAME '=' expr                    an output (later stmts may use it)
//   expr      := additive [ cmpop additive ]     comparisons only inside where(...)
//   additive  := term { ('+' | '-') term }
//   term      := unary { ('*' | '/') unary }
//   unary     := '-' unary | primary
//   primary   := NUMBER | '(' expr ')' | NAME '(' args ')' | NAME '[' AXIS {',' AXIS} ']' | NAME
//   calls     := exp log tanh sigmoid relu gelu gelu_tanh silu sqrt rsqrt abs (one argument),
//                min max (two), pow(e, NUMBER), where(cond, a, b),
//                sum mean max (e, AXIS {[','] AXIS})  a reduction over the axes
//   AXIS      := col row (a [rows, cols] domain) | n c hw (NCHW, H*W flattened)
//              | d0 d1 d2 d3 (up to 4-D, numpy order reversed: d0 is the last axis)
//   sum|mean|max(e, col) reduce along the last axis; in a d0..d3 expression
//   also written (e, d0), and a row is then one (d1, d2, d3) point.
//
// A bare NAME is a full-shape input unless it is a param or an earlier
// output; NAME[axes] is an input broadcast along the other axes: with d0..d3
// that is any numpy broadcast of up to four dims (a [B,1,1,S] mask over
// [B,H,S,S] scores is mask[d0,d3], a [1,S,D] table over [B,S,D] is pos[d0,d1]).
// Col/row or n/c/hw axes listed in another order than innermost first are
// its storage order (x[row, col] reads x transposed; x[c, hw, n] an NHWC tensor).
// sum(e, col) reduces along each row (a row reduction). Reductions over
// other axes (mean(x, hw), sum(x, n hw), max(x, c)) and permuted inputs
// make a general layout (fusion_candidate.h): an output is indexed by the
// axes it varies along (mean(x, hw) is [n, c]), every output of one
// expression by the same ones, and only the Halide backend builds it. Errors are
// UserErrors of the form "expression:LINE:COL: message".
//
// Limits (each refusal names it): the generated kernel, the Halide
// reference and the printers walk the tree recursively and every input is a
// kernel argument, so an expression is bounded in depth (nesting, chained
// operators and inlined outputs all count), in size and in names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "generator/candidates/fusion_candidate.h"

namespace fusekit {

constexpr size_t kMaxExpressionChars = 1 << 20;
constexpr int kMaxDepth = 256;          // levels of the expression tree
constexpr int64_t kMaxNodes = 20000;    // operations, earlier outputs inlined
constexpr size_t kMaxInputs = 64;
constexpr size_t kMaxOutputs = 16;
constexpr size_t kMaxParams = 64;
constexpr size_t kMaxNameChars = 64;

FusionCandidate parse_expression(const std::string& source);

}  // namespace fusekit
