# Run at every build: stamp the current git revision into version.h, rewriting the
# file only when it changed (so an unchanged revision rebuilds nothing).
execute_process(COMMAND git describe --always --dirty --abbrev=12
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE T3SIM_GIT_REV
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT T3SIM_GIT_REV)
  set(T3SIM_GIT_REV "unknown")
endif()
configure_file(${INPUT} ${OUTPUT}.tmp @ONLY)
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
