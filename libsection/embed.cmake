# Writes a C++ header holding the bytes of a C file as a string constant, so that C text lives
# in real .c/.h files (read, highlighted and checked as C) and is part of the library.
#   cmake -DINPUT=<file> -DOUTPUT=<header> -DNAME=<identifier> -P embed.cmake
# Lines whose first non-blank characters are `//` are the file's notes to its readers and are
# left out: the text a module gets (and its cache key) is the code alone. The header declares
# `section::embedded::<NAME>`.
file(READ "${INPUT}" text)
set(text "\n${text}")
string(REGEX REPLACE "\n[ \t]*//[^\n]*" "" text "${text}")
string(SUBSTRING "${text}" 1 -1 text)
set(delimiter "libsection")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds `)${delimiter}\"`, which ends the raw string it goes into")
endif()
file(RELATIVE_PATH shown "${CMAKE_CURRENT_LIST_DIR}/.." "${INPUT}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${shown} by libsection/embed.cmake: edit that file, not this one.\n"
  "#pragma once\n\nnamespace section::embedded {\n"
  "inline constexpr char ${NAME}[] = R\"${delimiter}(${text})${delimiter}\";\n}\n")
# Rewritten only when it changes, so that what includes it is not recompiled for nothing.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
