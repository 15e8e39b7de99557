import sys
x = 1
sys.exit(3)
y = 2
