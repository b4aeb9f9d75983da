# SPDX-License-Identifier: Apache-2.0
"""Recorded lab texts for the ``slurm-gpu why`` unit tests (Slurm 22.05.8, captured from the lab as
labuser: 1195 RUNNING 2 h100 in QOS debug, 1196 the same pending on QOSMaxGRESPerUser, 1197 held
(--gres=gpu:a100:1), 1198 afterok:1197, 1199 2 x 8 h100 in QOS high pending on Resources; the nodes,
partitions and ``sacctmgr -nP show qos format=`` QOS_FORMAT at that moment). :func:`spelled_24_11`
rewrites them in 24.11's spellings (``gres/gpu`` in TresPer*/CpusPerTres/MemPerTres, ``ReqTRES=`` and,
once allocated, ``AllocTRES=`` instead of ``TRES=``), by hand from the differences slurm/records.py
documents; no 24.11 capture of pending jobs was at hand."""

from __future__ import annotations

import re

JOBS_22_05 = "\n".join([
    ('JobId=1195 JobName=wrap UserId=labuser(1001) GroupId=labuser(1001) MCS_label=N/A Priority=4294901201'
     ' Nice=0 Account=lab QOS=debug JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 Ba'
     'tchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:08 TimeLimit=00:10:00 TimeMin=N/A SubmitTime=2026-12-0'
     '1T00:55:56 EligibleTime=2026-12-01T00:55:56 AccrueTime=2026-12-01T00:55:56 StartTime=2026-12-01T00:5'
     '5:57 EndTime=2026-12-01T01:05:57 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-1'
     '2-01T00:55:57 Scheduler=Backfill Partition=interactive AllocNode:Sid=localhost:14174 ReqNodeList=(nu'
     'll) ExcNodeList=(null) NodeList=h100n2 BatchHost=h100n2 NumNodes=1 NumCPUs=8 NumTasks=1 CPUs/Task=1 '
     'ReqB:S:C:T=0:0:*:* TRES=cpu=8,mem=120G,node=1,billing=8,gres/gpu=2,gres/gpu:h100=2 Socks/Node=* Ntas'
     'ksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) Delay'
     'Boot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/t'
     'mp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= CpusPerTres=gpu:4 MemPerTres=gpu:61440 T'
     'resPerJob=gres:gpu:h100:2 '),
    ('JobId=1196 JobName=wrap UserId=labuser(1001) GroupId=labuser(1001) MCS_label=N/A Priority=4294901200'
     ' Nice=0 Account=lab QOS=debug JobState=PENDING Reason=QOSMaxGRESPerUser Dependency=(null) Requeue=1 '
     'Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:10:00 TimeMin=N/A SubmitT'
     'ime=2026-12-01T00:55:57 EligibleTime=2026-12-01T00:55:57 AccrueTime=2026-12-01T00:55:57 StartTime=Un'
     'known EndTime=Unknown Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-01T00:56:'
     '02 Scheduler=Backfill:* Partition=interactive AllocNode:Sid=localhost:14174 ReqNodeList=(null) ExcNo'
     'deList=(null) NodeList= NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,me'
     'm=4000M,node=1,billing=1,gres/gpu=2,gres/gpu:h100=2 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*'
     ' MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK '
     'Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp StdErr=/dev/null StdIn=/dev/'
     'null StdOut=/dev/null Power= CpusPerTres=gpu:4 MemPerTres=gpu:61440 TresPerJob=gres:gpu:h100:2 '),
    ('JobId=1197 JobName=wrap UserId=labuser(1001) GroupId=labuser(1001) MCS_label=N/A Priority=0 Nice=0 A'
     'ccount=lab QOS=normal JobState=PENDING Reason=JobHeldUser Dependency=(null) Requeue=1 Restarts=0 Bat'
     'chFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:10:00 TimeMin=N/A SubmitTime=2026-12-01'
     'T00:55:57 EligibleTime=Unknown AccrueTime=Unknown StartTime=Unknown EndTime=Unknown Deadline=N/A Sus'
     'pendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-01T00:55:57 Scheduler=Main Partition=batch Allo'
     'cNode:Sid=localhost:14174 ReqNodeList=(null) ExcNodeList=(null) NodeList= NumNodes=1 NumCPUs=1 NumTa'
     'sks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=4000M,node=1,billing=1,gres/gpu=1,gres/gpu:a100='
     '1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryCPU=4000M MinTmpDiskNode=0'
     ' Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Com'
     'mand=(null) WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= TresPerNode=gres:g'
     'pu:a100:1 '),
    ('JobId=1198 JobName=wrap UserId=labuser(1001) GroupId=labuser(1001) MCS_label=N/A Priority=4294901199'
     ' Nice=0 Account=lab QOS=normal JobState=PENDING Reason=Dependency Dependency=afterok:1197(unfulfille'
     'd) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:10:00 TimeMi'
     'n=N/A SubmitTime=2026-12-01T00:55:57 EligibleTime=Unknown AccrueTime=Unknown StartTime=Unknown EndTi'
     'me=Unknown Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-01T00:55:57 Schedule'
     'r=Main Partition=batch AllocNode:Sid=localhost:14174 ReqNodeList=(null) ExcNodeList=(null) NodeList='
     ' NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=4000M,node=1,billing='
     '1,gres/gpu=1,gres/gpu:h100=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemor'
     'yCPU=4000M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 License'
     's=(null) Network=(null) Command=(null) WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/nul'
     'l Power= CpusPerTres=gpu:4 MemPerTres=gpu:61440 TresPerJob=gres:gpu:h100:1 '),
    ('JobId=1199 JobName=wrap UserId=labuser(1001) GroupId=labuser(1001) MCS_label=N/A Priority=4294901198'
     ' Nice=0 Account=lab QOS=high JobState=PENDING Reason=Resources Dependency=(null) Requeue=1 Restarts='
     '0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:10:00 TimeMin=N/A SubmitTime=2026-'
     '12-01T00:55:57 EligibleTime=2026-12-01T00:55:57 AccrueTime=2026-12-01T00:55:57 StartTime=2026-12-01T'
     '01:05:57 EndTime=2026-12-01T01:15:57 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=20'
     '26-12-01T00:56:02 Scheduler=Backfill:* Partition=batch AllocNode:Sid=localhost:14174 ReqNodeList=(nu'
     'll) ExcNodeList=(null) NodeList= SchedNodeList=h100n[1-2] NumNodes=2-2 NumCPUs=2 NumTasks=2 CPUs/Tas'
     'k=1 ReqB:S:C:T=0:0:*:* TRES=cpu=2,mem=8000M,node=2,billing=2,gres/gpu=16,gres/gpu:h100=16 Socks/Node'
     '=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null'
     ') DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) Wor'
     'kDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= CpusPerTres=gpu:4 MemPerTres=gpu:'
     '61440 TresPerNode=gres:gpu:h100:8'),
])

NODES_22_05 = "\n".join([
    ('NodeName=a100n1 Arch=x86_64 CoresPerSocket=16  CPUAlloc=4 CPUEfctv=32 CPUTot=32 CPULoad=1.62 Availab'
     'leFeatures=a100,mig ActiveFeatures=a100,mig Gres=gpu:a100:4(S:0-1) NodeAddr=127.0.0.1 NodeHostName=v'
     'm Port=17003 Version=22.05.8 OS=Linux 6.18.44-fc-v782 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=512000 A'
     'llocMem=409600 FreeMem=21479 Sockets=2 Boards=1 State=MIXED ThreadsPerCore=1 TmpDisk=0 Weight=1 Owne'
     'r=N/A MCS_label=N/A Partitions=interactive,batch,spot,mig  BootTime=2026-11-30T22:08:56 SlurmdStartT'
     'ime=2026-12-01T00:36:45 LastBusyTime=2026-12-01T00:49:47 CfgTRES=cpu=32,mem=500G,billing=32,gres/gpu'
     '=4,gres/gpu:a100=4 AllocTRES=cpu=4,mem=400G,gres/gpu=1,gres/gpu:a100=1 CapWatts=n/a CurrentWatts=0 A'
     'veWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s'),
    ('NodeName=h100n1 Arch=x86_64 CoresPerSocket=16  CPUAlloc=32 CPUEfctv=32 CPUTot=32 CPULoad=1.49 Availa'
     'bleFeatures=h100,mig ActiveFeatures=h100,mig Gres=gpu:h100:8(S:0-1) NodeAddr=127.0.0.1 NodeHostName='
     'vm Port=17001 Version=22.05.8 OS=Linux 6.18.44-fc-v782 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=512000 '
     'AllocMem=307200 FreeMem=21033 Sockets=2 Boards=1 State=ALLOCATED ThreadsPerCore=1 TmpDisk=0 Weight=1'
     ' Owner=N/A MCS_label=N/A Partitions=interactive,batch,spot  BootTime=2026-11-30T22:08:56 SlurmdStart'
     'Time=2026-12-01T00:36:45 LastBusyTime=2026-12-01T00:49:47 CfgTRES=cpu=32,mem=500G,billing=32,gres/gp'
     'u=8,gres/gpu:h100=8 AllocTRES=cpu=32,mem=300G,gres/gpu=5,gres/gpu:h100=5 CapWatts=n/a CurrentWatts=0'
     ' AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s'),
    ('NodeName=h100n2 Arch=x86_64 CoresPerSocket=16  CPUAlloc=12 CPUEfctv=32 CPUTot=32 CPULoad=1.49 Availa'
     'bleFeatures=h100,mig ActiveFeatures=h100,mig Gres=gpu:h100:8(S:0-1) NodeAddr=127.0.0.1 NodeHostName='
     'vm Port=17002 Version=22.05.8 OS=Linux 6.18.44-fc-v782 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=512000 '
     'AllocMem=184320 FreeMem=21033 Sockets=2 Boards=1 State=MIXED ThreadsPerCore=1 TmpDisk=0 Weight=1 Own'
     'er=N/A MCS_label=N/A Partitions=interactive,batch,spot  BootTime=2026-11-30T22:08:56 SlurmdStartTime'
     '=2026-12-01T00:36:45 LastBusyTime=2026-12-01T00:49:33 CfgTRES=cpu=32,mem=500G,billing=32,gres/gpu=8,'
     'gres/gpu:h100=8 AllocTRES=cpu=12,mem=180G,gres/gpu=3,gres/gpu:h100=3 CapWatts=n/a CurrentWatts=0 Ave'
     'Watts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s'),
])

PARTITIONS_22_05 = "\n".join([
    ('PartitionName=interactive AllowGroups=ALL AllowAccounts=ALL AllowQos=debug,normal AllocNodes=ALL Def'
     'ault=NO QoS=N/A DefaultTime=01:00:00 DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO MaxNo'
     'des=UNLIMITED MaxTime=04:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED Nodes=a100n1,h100n[1-2] Pr'
     'iorityJobFactor=1 PriorityTier=10 RootOnly=NO ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE Preempt'
     'Mode=OFF State=UP TotalCPUs=96 TotalNodes=3 SelectTypeParameters=NONE JobDefaults=DefCpuPerGPU=4,Def'
     'MemPerGPU=61440 DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED TRES=cpu=96,mem=1500G,node=3,billing'
     '=96,gres/gpu=20,gres/gpu:a100=4,gres/gpu:h100=16'),
    ('PartitionName=batch AllowGroups=ALL AllowAccounts=ALL AllowQos=normal,high AllocNodes=ALL Default=YE'
     'S QoS=N/A DefaultTime=04:00:00 DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO MaxNodes=UN'
     'LIMITED MaxTime=2-00:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED Nodes=a100n1,h100n[1-2] Priori'
     'tyJobFactor=1 PriorityTier=5 RootOnly=NO ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode='
     'OFF State=UP TotalCPUs=96 TotalNodes=3 SelectTypeParameters=NONE JobDefaults=DefCpuPerGPU=4,DefMemPe'
     'rGPU=61440 DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED TRES=cpu=96,mem=1500G,node=3,billing=96,g'
     'res/gpu=20,gres/gpu:a100=4,gres/gpu:h100=16'),
    ('PartitionName=spot AllowGroups=ALL AllowAccounts=ALL AllowQos=spot AllocNodes=ALL Default=NO QoS=N/A'
     ' DefaultTime=04:00:00 DisableRootJobs=NO ExclusiveUser=NO GraceTime=120 Hidden=NO MaxNodes=UNLIMITED'
     ' MaxTime=1-00:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED Nodes=a100n1,h100n[1-2] PriorityJobFa'
     'ctor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=REQUEUE'
     ' State=UP TotalCPUs=96 TotalNodes=3 SelectTypeParameters=NONE JobDefaults=DefCpuPerGPU=4,DefMemPerGP'
     'U=61440 DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED TRES=cpu=96,mem=1500G,node=3,billing=96,gres'
     '/gpu=20,gres/gpu:a100=4,gres/gpu:h100=16'),
    ('PartitionName=mig AllowGroups=ALL AllowAccounts=ALL AllowQos=normal,debug AllocNodes=ALL Default=NO '
     'QoS=N/A DefaultTime=01:00:00 DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO MaxNodes=UNLI'
     'MITED MaxTime=12:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED Nodes=a100n1 PriorityJobFactor=1 P'
     'riorityTier=5 RootOnly=NO ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=UP To'
     'talCPUs=32 TotalNodes=1 SelectTypeParameters=NONE JobDefaults=DefCpuPerGPU=8,DefMemPerGPU=61440 DefM'
     'emPerNode=UNLIMITED MaxMemPerNode=UNLIMITED TRES=cpu=32,mem=500G,node=1,billing=32,gres/gpu=4,gres/g'
     'pu:a100=4'),
])

QOS_TEXT = "\n".join([
    'normal|gres/gpu=16|gres/gpu=8||||2-00:00:00',
    'debug|gres/gpu=2|gres/gpu=2||||00:30:00',
    'high|gres/gpu=16|gres/gpu=16||||2-00:00:00',
    'spot|gres/gpu=24|gres/gpu=8||||1-00:00:00',
])


def spelled_24_11(job_line: str) -> str:
    """One 22.05 ``scontrol show job -o`` line in 24.11's spelling."""
    line = re.sub(r"(TresPer\w+|CpusPerTres|MemPerTres)=gres:gpu", r"\1=gres/gpu", job_line)
    line = re.sub(r"(CpusPerTres|MemPerTres)=gpu:", r"\1=gres/gpu:", line)
    tres = re.search(r" TRES=(\S+)", line)
    if tres:
        alloc = f" AllocTRES={tres.group(1)}" if "JobState=RUNNING" in line else ""
        line = line.replace(tres.group(0), f" ReqTRES={tres.group(1)}{alloc}")
    return line
