# The HTML report: its unit tests in the Catch2 executable, and the page in a real headless browser
# (needs the Debian package chromium; the test fails, not skips, without it). Included from tests/CMakeLists.txt.
target_sources(habitat_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/html_test.cpp)
add_test(NAME report_html_browser
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/browser_test.sh $<TARGET_FILE:habitat_cli>
                 ${PROJECT_SOURCE_DIR}/fixtures/kineto/h100/resnet50_fp32_b32.json.gz ${CMAKE_BINARY_DIR}/report)
