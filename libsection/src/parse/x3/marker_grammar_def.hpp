// Grammar definition for marker lines. The grammar is deliberately tolerant: it accepts every
// spelling a user might type (indentation, `# section`, two spaces, a bad tag, trailing text) and
// keeps each part as a range; parse.cpp then checks the parts against the exact reference syntax
// `^#section [A-Za-z0-9_]+$`, so near misses get a precise diagnostic instead of a failed parse.
#pragma once

#include <boost/spirit/home/x3.hpp>

#include "parse/x3/marker_ast.hpp"
#include "parse/x3/marker_ast_adapted.hpp"

namespace section::parser {

namespace x3 = boost::spirit::x3;

///////////////////////////////////////////////////////////////////////////////
// Rule IDs
///////////////////////////////////////////////////////////////////////////////
struct section_marker_class;
struct legacy_marker_class;

///////////////////////////////////////////////////////////////////////////////
// Rules
///////////////////////////////////////////////////////////////////////////////
x3::rule<section_marker_class, ast::section_marker> const section_marker = "section marker";
x3::rule<legacy_marker_class, ast::legacy_marker> const legacy_marker = "legacy section marker";

///////////////////////////////////////////////////////////////////////////////
// Grammar
///////////////////////////////////////////////////////////////////////////////
auto const blanks = x3::raw[*x3::ascii::blank];
auto const rest_of_line = x3::raw[*x3::char_];

auto const section_marker_def =
    blanks                                       // indent (must be empty)
    >> x3::raw[x3::lit('#')]                     // hash
    >> blanks                                    // gap after `#` (must be empty)
    >> x3::raw[x3::no_case[x3::lit("section")]]  // keyword (must be lower-case)
    >> blanks                                    // gap before tag (must be one space)
    >> x3::raw[*(x3::char_ - x3::ascii::blank)]  // tag (must be [A-Za-z0-9_]+)
    >> rest_of_line;                             // trailing (must be empty)

auto const legacy_marker_def =
    blanks  // indent (must be empty)
    >> x3::raw[x3::lit("THEANO_") | x3::lit("AESARA_") | x3::lit("PYTENSOR_")]  // prefix
    >> x3::raw[x3::lit("APPLY") | x3::lit("SUPPORT")]                           // kind
    >> x3::lit("_CODE_SECTION")                                                 //
    >> rest_of_line;  // trailing (must be empty)

BOOST_SPIRIT_DEFINE(section_marker, legacy_marker)

}  // namespace section::parser
