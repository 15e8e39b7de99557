import runpy, sys
sys.argv = ['main.py', 'a']
runpy.run_path('/work/main/tests/coverage/work-source/lib/app/main.py', run_name='__main__')
