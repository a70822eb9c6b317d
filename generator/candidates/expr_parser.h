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
//                min max (two), pow(e, NUMBER), where(cond, a, b)
//   AXIS      := col row (a [rows, cols] domain) | n c hw (NCHW, H*W flattened)
//
// A bare NAME is a full-shape input unless it is a param or an earlier
// output; NAME[axes] is an input broadcast along the other axes. Errors are
// UserErrors of the form "expression:LINE:COL: message".
#pragma once

#include <string>

#include "generator/candidates/fusion_candidate.h"

namespace fusekit {

FusionCandidate parse_expression(const std::string& source);

}  // namespace fusekit
