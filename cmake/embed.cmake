# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake: the bytes of IN
# as a C array NAME (and NAME_len) in OUT, for files served from the binary.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," arr "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n" arr "${arr}")
get_filename_component(in_name "${IN}" NAME)
file(WRITE "${OUT}.tmp"
  "/* generated from ${in_name} by cmake/embed.cmake: do not edit */\n"
  "#include \"server/http/dashboard.h\"\n"
  "const unsigned char ${NAME}[] = {\n${arr}0x00};\n"
  "const size_t ${NAME}_len = ${bytes};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
