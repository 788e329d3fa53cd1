"""`foliolab bisect`: the search (search.py), its request, steps and
bisect.json (record.py), and the lab that builds and counts a commit
(lab.py).
"""
