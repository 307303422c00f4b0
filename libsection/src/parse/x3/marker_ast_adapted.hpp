// Fusion adaptation of the marker AST, so X3 can fill it.
#pragma once

#include <boost/fusion/include/adapt_struct.hpp>

#include "parse/x3/marker_ast.hpp"

BOOST_FUSION_ADAPT_STRUCT(section::parser::ast::section_marker, indent, hash, gap_after_hash,
                          keyword, gap_before_tag, tag, trailing)
BOOST_FUSION_ADAPT_STRUCT(section::parser::ast::legacy_marker, indent, prefix, kind, trailing)
